"""Parsers generated from dataclass configs (veco-gettext-corpus, veco-gettext-dictionary,
the quickstart): every field of the config is a flag with the field's type, default, help
and required-ness, every flag of the parser is a field (or one of the few flags that are not
one setting each), and parsed flags become the config unchanged."""

import argparse
import dataclasses
import typing
from pathlib import Path

import pytest

from tests.helpers.catalogs import write_mo
from veco_plugin.cli import gettext_corpus, gettext_dictionary
from veco_plugin.cli.config_flags import add_config_flags, config_from_flags
from veco_plugin.corpora.gettext import CorpusConfig
from veco_plugin.corpora.gettext_dictionary import DictionaryConfig
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
