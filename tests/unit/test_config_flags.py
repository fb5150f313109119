"""Parsers generated from dataclass configs (veco-gettext-corpus, veco-gettext-dictionary,
veco-wmt14 prepare/missing/score, veco-prepare-pretraining, the quickstart): every field of
the config is a flag with the field's type, default, help, choices and required-ness, every
flag of the parser is a field (or one of the few flags that are not one setting each), and
parsed flags become the config unchanged."""

import argparse
import dataclasses
import os
import typing
from pathlib import Path

import pytest

from tests.helpers.catalogs import write_mo
from veco_plugin.cli import gettext_corpus, gettext_dictionary, prepare_pretraining
from veco_plugin.cli import wmt14 as wmt14_cli
from veco_plugin.cli.config_flags import add_config_flags, config_from_flags
from veco_plugin.corpora.gettext import CorpusConfig
from veco_plugin.corpora.gettext_dictionary import DictionaryConfig
from veco_plugin.corpora.wmt14 import CleanConfig, PrepareConfig
from veco_plugin.evaluation.bleu import ScoreConfig
from veco_plugin.prepare.plan import Settings
from veco_plugin.quickstart import options

TOOLS = [(gettext_corpus, CorpusConfig), (gettext_dictionary, DictionaryConfig)]


def _flags(parser: argparse.ArgumentParser):
    return {a.dest: a for a in parser._actions if a.dest != "help"}


@pytest.mark.parametrize("tool, config", TOOLS, ids=lambda x: getattr(x, "__name__", ""))
def test_the_flags_are_the_config_fields(tool, config):
    flags, hints = _flags(tool.get_parser()), typing.get_type_hints(config)
    assert list(flags) == [f.name for f in dataclasses.fields(config)]
    for f in dataclasses.fields(config):
        flag = flags[f.name]
        assert flag.option_strings == ["--" + f.name.replace("_", "-")]
        assert flag.help == f.metadata["help"]
        assert flag.required == (f.default is dataclasses.MISSING)
        if not flag.required:
            assert flag.default == f.default and type(flag.default) is type(f.default)
        if hints[f.name] is bool:
            assert isinstance(flag, argparse._StoreTrueAction) and f.default is False
        else:
            assert flag.type in typing.get_args(hints[f.name]) + (hints[f.name],)


@pytest.mark.parametrize("tool, config", TOOLS, ids=lambda x: getattr(x, "__name__", ""))
def test_required_flags_and_defaults_give_the_config(tool, config):
    args = tool.get_parser().parse_args(["--tgt-lang", "de", "--output", "out"])
    assert config_from_flags(config, args) == config(tgt_lang="de", output=Path("out"))


def test_typed_values_and_argparse_errors():
    parser = gettext_corpus.get_parser()
    args = parser.parse_args(
        "--tgt-lang fr --output o --locale-dir L --max-ratio 2.5 --max-catalogs 3".split()
    )
    cfg = config_from_flags(CorpusConfig, args)
    assert (cfg.locale_dir, cfg.max_ratio, cfg.max_catalogs) == (Path("L"), 2.5, 3)
    assert (
        gettext_dictionary.get_parser()
        .parse_args(["--tgt-lang", "de", "--output", "o", "--keep-case"])
        .keep_case
    )
    with pytest.raises(SystemExit):
        parser.parse_args(["--output", "o"])  # --tgt-lang is required


def test_text_flags_and_a_subset_of_fields():
    @dataclasses.dataclass
    class Settings:
        size: int = dataclasses.field(default=4, metadata={"help": "n [%(default)s]"})
        name: str = dataclasses.field(default="x", metadata={"help": "a name"})
        fast: bool = dataclasses.field(default=False, metadata={"help": "go"})

    parser = argparse.ArgumentParser()
    add_config_flags(parser, Settings, ["size", "fast"], text=True)
    assert vars(parser.parse_args([])) == {"size": "4", "fast": False}
    assert vars(parser.parse_args(["--size", "4k", "--fast"])) == {"size": "4k", "fast": True}
    assert "n [4]" in " ".join(parser.format_help().split())
    with pytest.raises(ValueError, match="Settings has no field nmae"):
        add_config_flags(argparse.ArgumentParser(), Settings, ["nmae"])


QUICKSTART_ONLY_FLAGS = {"text", "device", "jobs", "smoke"}  # not one field each (and -h)


def test_quickstart_flags_are_the_config_fields_by_section():
    parser = options.get_parser()
    sections = {a.dest: g.title for g in parser._action_groups for a in g._group_actions}
    flags = _flags(parser)
    grouped = [f for f in dataclasses.fields(options.Config) if "group" in f.metadata]
    for f in grouped:
        flag = flags[f.name]
        assert sections[f.name] == f.metadata["group"] and flag.help == f.metadata["help"]
        assert flag.option_strings == ["--" + f.name.replace("_", "-")]
        if isinstance(f.default, bool):
            assert isinstance(flag, argparse._StoreTrueAction) and f.default is False
        else:  # read as text, converted by check()
            assert flag.type is str and flag.default == str(f.default)
    switches = {dest for dest in flags if dest.startswith("switch_")}
    assert set(flags) == {f.name for f in grouped} | QUICKSTART_ONLY_FLAGS | switches


def test_quickstart_default_flags_check_to_the_config_defaults(tmp_path, monkeypatch):
    write_mo(tmp_path / "de" / "LC_MESSAGES" / "app.mo", {"File": "Datei"})
    monkeypatch.setattr(options, "DEFAULT_LOCALE_DIR", str(tmp_path))
    cfg = options.check(options.parse_args(["--jobs", "1"]), which=lambda tool: tool)
    for f in dataclasses.fields(options.Config):
        if "group" in f.metadata and f.name != "locale_dir":
            assert getattr(cfg, f.name) == f.default, f.name
    assert cfg.locale_dir == str(tmp_path)  # the default read when the parser is built


def _config_fields(config, skip=()):
    """(field, type hint) of every field of ``config`` but ``skip``, a nested config's
    fields in its place."""
    hints = typing.get_type_hints(config)
    out = []
    for f in dataclasses.fields(config):
        if dataclasses.is_dataclass(hints[f.name]):
            out += _config_fields(hints[f.name])
        elif f.name not in skip:
            out.append((f, hints[f.name]))
    return out


def _check_flags(parser, fields, hand_written=(), types=None):
    """Every field is its flag (name, help, required-ness, default, type or choices);
    every flag is a field but the ``hand_written`` ones."""
    flags = _flags(parser)
    assert set(flags) == {f.name for f, _ in fields} | set(hand_written)
    for f, hint in fields:
        flag = flags[f.name]
        assert flag.option_strings == ["--" + f.name.replace("_", "-")]
        assert flag.help == f.metadata.get("help")
        assert flag.required == (f.default is dataclasses.MISSING)
        if not flag.required:
            assert flag.default == f.default and type(flag.default) is type(f.default)
        if hint is bool:
            assert isinstance(flag, argparse._StoreTrueAction) and f.default is False
        elif "choices" in f.metadata:
            assert flag.type is str and flag.choices == list(f.metadata["choices"])
        elif f.name in (types or {}):
            assert flag.type is types[f.name]
        else:
            assert flag.choices is None
            assert flag.type in typing.get_args(hint) + (hint,)


def _subparser(parser, name):
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return sub.choices[name]


WMT14_PREPARE = ["prepare", "--pair", "en-de", "--raw-dir", "R", "--work-dir", "W"]
WMT14_PREPARE += ["--dest-dir", "D"]


def test_wmt14_prepare_flags_are_the_prepare_and_clean_config_fields():
    parser = _subparser(wmt14_cli.get_parser(), "prepare")
    # drop_bad_utf8 (a bool) is --bad-utf8 {error,drop}: a word, not a switch
    _check_flags(parser, _config_fields(PrepareConfig, ["drop_bad_utf8"]), ["bad_utf8"])
    (group,) = parser._mutually_exclusive_groups
    assert group.required and [a.dest for a in group._group_actions] == [
        "spm_model",
        "bpe_codes",
    ]
    args = parser.parse_args(WMT14_PREPARE[1:] + ["--spm-model", "m"])
    assert wmt14_cli.prepare_config(args) == PrepareConfig("en-de", "R", "W", "D", "m")


def test_wmt14_prepare_flags_give_the_config():
    argv = WMT14_PREPARE + ["--bpe-codes", "c", "--bpe-vocab", "v", "--min-len", "2"]
    argv += "--max-len 9 --ratio 2 --workers 3 --bad-utf8 drop --chunk-size 7".split()
    args = wmt14_cli.get_parser().parse_args(argv + ["--no-download"])
    assert wmt14_cli.prepare_config(args) == PrepareConfig(
        "en-de",
        "R",
        "W",
        "D",
        bpe_codes="c",
        bpe_vocab="v",
        clean=CleanConfig(min_len=2, max_len=9, ratio=2.0),
        workers=3,
        drop_bad_utf8=True,
        chunk_size=7,
        no_download=True,
    )
    for wrong in (
        ["--spm-model", "m", "--bad-utf8", "skip"],
        ["--spm-model", "m", "--bpe-codes", "c"],  # one of the two
        [],  # and at least one
    ):
        with pytest.raises(SystemExit):
            wmt14_cli.get_parser().parse_args(WMT14_PREPARE + wrong)


def test_wmt14_missing_flags_are_prepare_config_fields():
    parser = _subparser(wmt14_cli.get_parser(), "missing")
    fields = [(f, h) for f, h in _config_fields(PrepareConfig) if f.name in ("pair", "raw_dir")]
    _check_flags(parser, fields)
    with pytest.raises(SystemExit):
        parser.parse_args(["--pair", "en-xx", "--raw-dir", "R"])


def test_wmt14_score_flags_are_the_score_config_fields():
    parser = _subparser(wmt14_cli.get_parser(), "score")
    _check_flags(parser, _config_fields(ScoreConfig))
    argv = "--generate-output g --raw-ref r --tgt de --hyp-out h".split()
    args = parser.parse_args(argv)
    assert config_from_flags(ScoreConfig, args) == ScoreConfig("g", "r", "de", "h")
    args = parser.parse_args(argv + ["--subword", "fastbpe", "--raw-src", "s", "--json", "j"])
    assert config_from_flags(ScoreConfig, args) == ScoreConfig(
        "g", "r", "de", "h", raw_src="s", subword="fastbpe", json="j"
    )
    with pytest.raises(SystemExit):
        parser.parse_args(argv + ["--subword", "bpe"])


PREPARE_PRETRAINING_ONLY_FLAGS = {"out", "shard", "workers", "threads"}  # not settings


def test_prepare_pretraining_flags_are_the_settings_fields(capsys):
    parser = prepare_pretraining.get_parser()
    _check_flags(
        parser,
        _config_fields(Settings),
        PREPARE_PRETRAINING_ONLY_FLAGS,
        prepare_pretraining.COUNTS,
    )
    args = parser.parse_args(["--text", "T", "--out", "O"])
    assert prepare_pretraining.settings_from_args(args) == Settings(os.path.abspath("T"))
    counts = ["--shards", "--workers", "--threads", "--vocab-size", "--spm-sample-lines"]
    for flag in counts:
        for value, words in (("0", "0: pass 1 or more"), ("x", "invalid _positive value: 'x'")):
            with pytest.raises(SystemExit):
                parser.parse_args(["--text", "T", "--out", "O", flag, value])
            assert f"error: argument {flag}: {words}\n" in capsys.readouterr().err


def test_nested_configs_choices_read_functions_and_flag_order():
    @dataclasses.dataclass(frozen=True)
    class Inner:
        low: int = dataclasses.field(default=1, metadata={"help": "low"})

    @dataclasses.dataclass(frozen=True)
    class Outer:
        need: str
        kind: str = dataclasses.field(default="a", metadata={"choices": ("a", "b")})
        inner: Inner = Inner()
        count: int = 2
        flag: bool = False

    def _even(text):
        if int(text) % 2:
            raise argparse.ArgumentTypeError(f"{text}: not even")
        return int(text)

    parser = argparse.ArgumentParser()
    add_config_flags(parser, Outer, ["count", "inner", "kind", "need"], types={"count": _even})
    assert [a.dest for a in parser._actions[1:]] == ["count", "low", "kind", "need"]
    args = parser.parse_args(["--need", "x", "--low", "3", "--kind", "b", "--count", "4"])
    assert config_from_flags(Outer, args, flag=True) == Outer("x", "b", Inner(3), 4, True)
    for wrong in (["--kind", "c"], ["--count", "3"]):
        with pytest.raises(SystemExit):
            parser.parse_args(["--need", "x"] + wrong)
