"""The quickstart's flags: the --smoke preset, the table's switches, every check's message."""

import pytest

from tests.helpers.catalogs import write_mo
from tests.helpers.quickstart import config
from veco_plugin.objectives import OBJECTIVES, WORD_LIST
from veco_plugin.quickstart import options, stages
from veco_plugin.quickstart.options import QuickstartError

SWITCHES = {row.run: True for row in OBJECTIVES if row.quickstart_switch}
WORD_LIST_ROW = next(row for row in OBJECTIVES if WORD_LIST in row.needs)


@pytest.fixture(autouse=True)
def catalogs(tmp_path, monkeypatch):
    """--locale-dir defaults to a directory with one German catalog (the word-list check
    looks for LOCALE/<tgt>/LC_MESSAGES/*.mo)."""
    write_mo(tmp_path / "locale" / "de" / "LC_MESSAGES" / "app.mo", {"File": "Datei"})
    monkeypatch.setattr(options, "DEFAULT_LOCALE_DIR", str(tmp_path / "locale"))
    return tmp_path / "locale"


def test_defaults_and_smoke_preset_where_later_flags_win():
    cfg = config()
    assert (cfg.pretrain_updates, cfg.finetune_updates, cfg.dwa_updates) == (1000, 600, 300)
    assert (cfg.pretrain_lr, cfg.device, cfg.num_decoder_layers) == ("2e-3", "cpu", 2)
    assert cfg.switches == {"xlm": True, "alignmlm": True, "weam": True} == SWITCHES
    smoke = config("--finetune-updates", "40", "--smoke")  # explicit flags win, wherever
    assert (smoke.finetune_updates, smoke.eval_interval, smoke.dwa_updates) == (40, 10, 5)
    assert smoke.vocab_size == 1000 and smoke.pretrain_updates == 20


def test_switches_come_from_the_table():
    assert config("--no-xlm").switches == {**SWITCHES, "xlm": False}
    assert config("--no-xlm", "--xlm").switches == SWITCHES
    assert config("--no-alignmlm", "--no-weam").switches == {
        **SWITCHES, "alignmlm": False, "weam": False
    }  # fmt: skip
    help_text = options.get_parser().format_help()
    assert "--alignmlm" in help_text and "--no-weam" in help_text


def test_a_row_that_needs_a_word_list_checks_language_and_catalogs(catalogs):
    skip = f"--no-{WORD_LIST_ROW.run}"
    who = f"the ALIGN-MLM row (--criterion {WORD_LIST_ROW.criterion})"
    with pytest.raises(QuickstartError) as info:
        config("--src", "fr")
    assert str(info.value) == (
        f"{who} needs an English-X word list (veco-gettext-dictionary): --src must be en, "
        f"got 'fr' (or {skip})"
    )
    with pytest.raises(QuickstartError) as info:
        config("--tgt", "xx")
    assert str(info.value) == (
        f"{who} needs an en-xx word list from the gettext catalogs, but "
        f"{catalogs}/xx/LC_MESSAGES has no *.mo: fix --tgt or --locale-dir (or {skip})"
    )
    with pytest.raises(QuickstartError, match="^veco-gettext-dictionary not on PATH"):
        config(which=lambda t: None if t == "veco-gettext-dictionary" else t)
    # without the row (switched off, or no pre-training updates for it) nothing is checked
    assert config("--src", "fr", "--tgt", "xx", skip).src == "fr"
    no_tool = config(skip, which=lambda t: None if t == "veco-gettext-dictionary" else t)
    assert no_tool.switches[WORD_LIST_ROW.run] is False


@pytest.mark.parametrize(
    "spec, depth", [("all", 2), ("last:1", 1), ("first:2", 2), ("0,1", 2), ("1,", 1)]
)
def test_decoder_depth_from_the_layer_spec(spec, depth):
    assert config("--decoder-layers", spec).num_decoder_layers == depth


def test_jobs_default_to_one_on_gpu():
    args = options.parse_args(["--gpu"])
    assert options.check(args, which=lambda t: t).jobs == 1


def test_gpu_preset_where_later_flags_and_smoke_win():
    gpu = config("--gpu")
    assert (gpu.device, gpu.arch, gpu.num_decoder_layers) == ("gpu", "small", 3)
    assert (gpu.pretrain_updates, gpu.finetune_updates, gpu.dwa_updates) == (10000, 3000, 1000)
    pretrain = stages.pretrain(gpu, OBJECTIVES[0]).command
    assert "--cpu" not in pretrain and pretrain[pretrain.index("--arch") + 1] == "veco_small"
    assert config("--gpu", "--pretrain-updates", "2000").pretrain_updates == 2000
    smoke = config("--gpu", "--smoke")
    assert (smoke.device, smoke.pretrain_updates, smoke.arch) == ("gpu", 20, "small")


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--valid-size", "x"], "--valid-size must be a non-negative integer, got 'x'"),
        (["--seed", "-1"], "--seed must be a non-negative integer, got '-1'"),
        (
            ["--arch", "huge"],
            "--arch huge: choose tiny, small, base or large (veco-init-nmt maps only these "
            "sizes)",
        ),
        (["--decoder-layers", "last:5"], "--decoder-layers 'last:5'"),
        (
            ["--pretrain-updates", "0"],
            "--pretrain-updates, --finetune-updates and --eval-interval must be > 0",
        ),
        (
            ["--finetune-updates", "25"],
            "--finetune-updates (25) must be a multiple of --eval-interval (100)",
        ),
        (["--average-last", "7"], "--average-last must be in 1..6 (checkpoints saved)"),
        (["--max-positions", "15"], "--max-positions must be even and >= 16"),
        (["--src", "de"], "--src and --tgt must differ"),
        (["--user-dir", "/no/such/dir"], "--user-dir /no/such/dir not found"),
        (["--jobs", "0"], "--jobs must be a positive integer, got '0'"),
    ],
)
def test_each_check_says_what_to_fix(flags, message):
    with pytest.raises(QuickstartError) as info:
        config(*flags)
    assert str(info.value).startswith(message)


def test_missing_tools_and_python():
    with pytest.raises(QuickstartError, match=r"^veco-align not on PATH \(activate the venv"):
        config(which=lambda t: None if t == "veco-align" else t)
    with pytest.raises(QuickstartError, match=r"^--python py9 not found$"):
        config("--python", "py9", which=lambda t: None if t == "py9" else t)


def test_unknown_or_incomplete_flags_end_with_one_line(capsys):
    for argv, message in (
        (["--nope"], "unknown flag --nope"),
        (["--seed"], "argument --seed: expected one"),
    ):
        with pytest.raises(SystemExit) as info:
            options.parse_args(argv)
        assert info.value.code == 1
        assert f"quickstart: error: {message}" in capsys.readouterr().err
