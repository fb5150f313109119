"""The quickstart's stages and pipelines: read from the table of objectives, with the
exact commands of the bash quickstart (the README repeats them)."""

import dataclasses
import sys

import pytest

from tests.helpers.catalogs import write_mo
from tests.helpers.quickstart import config
from veco_plugin.objectives import OBJECTIVES, WORD_ALIGNMENTS, WORD_LIST, Objective, objective
from veco_plugin.quickstart import options, stages
from veco_plugin.quickstart.options import PACKAGE_DIR, ROOT

NO_NEW_ROWS = ("--no-alignmlm", "--no-weam")


@pytest.fixture(autouse=True)
def catalogs(tmp_path, monkeypatch):
    """--locale-dir defaults to a directory with a German catalog (the word-list check)."""
    write_mo(tmp_path / "locale" / "de" / "LC_MESSAGES" / "app.mo", {"File": "Datei"})
    monkeypatch.setattr(options, "DEFAULT_LOCALE_DIR", str(tmp_path / "locale"))
    return str(tmp_path / "locale")


def _names(cfg):
    return [[stage.name for stage in pipeline] for pipeline in stages.pipelines(cfg)]


def test_default_pipelines_from_the_table():
    cfg = config()
    assert stages.inits(cfg) == ["veco", "xlm", "alignmlm", "weam", "random"]
    assert _names(cfg) == [
        ["pretrain-veco", "init-veco", "finetune-veco", "eval-veco", "pretrain-dwa", "align"],
        ["pretrain-xlm", "init-xlm", "finetune-xlm", "eval-xlm"],
        ["pretrain-alignmlm", "init-alignmlm", "finetune-alignmlm", "eval-alignmlm"],
        ["pretrain-weam", "init-weam", "finetune-weam", "eval-weam"],
        ["finetune-random", "eval-random"],
    ]
    assert stages.labels()["random"] == "random initialization"
    assert stages.labels()["veco"] == OBJECTIVES[0].label


def test_flags_that_drop_rows():
    assert _names(config("--no-xlm", *NO_NEW_ROWS)) == [
        ["pretrain-veco", "init-veco", "finetune-veco", "eval-veco", "pretrain-dwa", "align"],
        ["finetune-random", "eval-random"],
    ]
    assert stages.inits(config("--no-xlm")) == ["veco", "alignmlm", "weam", "random"]
    assert stages.inits(config("--no-weam")) == ["veco", "xlm", "alignmlm", "random"]
    assert stages.inits(config(*NO_NEW_ROWS)) == ["veco", "xlm", "random"]
    assert _names(config("--dwa-updates", "0"))[0] == [
        "pretrain-veco", "init-veco", "finetune-veco", "eval-veco"
    ]  # fmt: skip


def test_adding_an_objective_is_one_row(monkeypatch):
    row = Objective(
        "veco_terms", "terms (veco_terms)", run="terms", starts_from="xlm", aligns=True,
        needs=(WORD_LIST,), train_flags=("--terms", "bi_tlm=1", "--x", "{word_list}/a"),
    )  # fmt: skip
    monkeypatch.setattr(stages, "OBJECTIVES", OBJECTIVES + (row,))
    cfg = config(*NO_NEW_ROWS)
    assert stages.inits(cfg) == ["veco", "xlm", "terms", "random"]
    names = _names(cfg)
    assert names[1] == [
        "pretrain-xlm", "init-xlm", "finetune-xlm", "eval-xlm",
        "pretrain-terms", "init-terms", "finetune-terms", "eval-terms", "align",
    ]  # fmt: skip
    align = stages.pipelines(cfg)[1][-1]
    assert align.command[-2:] == ["xlm", "terms"]  # before (starts_from), after
    pretrain = stages.pipelines(cfg)[1][4]
    assert pretrain.command[pretrain.command.index("--criterion") + 1] == "veco_terms"
    assert "/run/pretrain/xlm/checkpoint_last.pt" in pretrain.command
    assert pretrain.command[-4:] == ["--terms", "bi_tlm=1", "--x", "/run/word-list/a"]
    assert stages.needs(cfg) == [WORD_LIST]  # its word list, though ALIGN-MLM is off
    assert stages.inits(config("--no-xlm", *NO_NEW_ROWS)) == ["veco", "random"]  # start off
    assert stages.needs(config("--no-xlm", *NO_NEW_ROWS)) == []


def test_default_commands_are_the_bash_quickstarts():
    cfg = config()
    veco, xlm, alignmlm, weam, random = stages.pipelines(cfg)
    u = PACKAGE_DIR
    assert veco[0].command == (
        f"fairseq-train /run/data --user-dir {u} --task veco_pretraining --mono-langs en,de "
        "--bi-pairs en-de --arch veco_tiny --criterion ca_mlm --cpu --optimizer adam "
        "--adam-betas (0.9,0.98) --adam-eps 1e-6 --clip-norm 1.0 --lr 2e-3 "
        "--lr-scheduler inverse_sqrt --warmup-updates 200 --max-tokens 6144 "
        "--max-mono-positions 256 --max-bi-positions 128 --max-update 1000 "
        "--save-dir /run/pretrain/veco --no-epoch-checkpoints --save-interval-updates 500 "
        "--keep-interval-updates 1 --validate-interval-updates 1000 --validate-interval 1000000 "
        "--log-format json --log-interval 50 --seed 1 --num-workers 0"
    ).split(" ")
    assert veco[1].command == (
        "veco-init-nmt --pretrained /run/pretrain/veco/checkpoint_last.pt --output "
        "/run/init/veco.pt --arch veco_transformer_tiny --decoder-layers all --dict "
        "/run/data/dict.txt --seed 1"
    ).split(" ")
    eval_args = '{"beam": 1, "max_len_a": 1.2, "max_len_b": 10}'
    finetune = (
        f"fairseq-train /run/nmt-bin --user-dir {u} --task translation_from_pretrained_veco "
        "-s en -t de --arch veco_transformer_tiny --decoder-layers 2 "
        "--max-source-positions 256 --max-target-positions 256 "
        "--finetune-from-model /run/init/veco.pt --cpu "
        "--criterion label_smoothed_cross_entropy --label-smoothing 0.1 --optimizer adam "
        "--adam-betas (0.9,0.98) --adam-eps 1e-6 --clip-norm 1.0 --lr 2e-3 "
        "--lr-scheduler inverse_sqrt --warmup-updates 200 --max-tokens 4096 --max-update 600 "
        "--save-dir /run/finetune/veco --no-epoch-checkpoints --save-interval-updates 100 "
        "--keep-interval-updates 3 --validate-interval-updates 100 --validate-interval 1000000 "
        "--eval-bleu --eval-bleu-remove-bpe sentencepiece --eval-bleu-args EVAL_ARGS "
        "--log-format json --log-interval 50 --seed 1 --num-workers 0"
    ).split(" ")
    assert veco[2].command == [eval_args if x == "EVAL_ARGS" else x for x in finetune]
    # the random row: the same fine-tuning without --finetune-from-model
    same = [x.replace("finetune/veco", "finetune/random") for x in veco[2].command]
    at = same.index("--finetune-from-model")
    assert random[0].command == same[:at] + same[at + 2 :]
    assert veco[4].command[-6:] == [
        "--restore-file", "/run/pretrain/veco/checkpoint_last.pt", "--reset-optimizer",
        "--reset-dataloader", "--reset-meters", "--reset-lr-scheduler",
    ]  # fmt: skip
    assert xlm[0].command[xlm[0].command.index("--criterion") + 1] == "tlm"
    assert veco[3].command[-6:] == ["--", "--max-len-a", "1.2", "--max-len-b", "10", "--cpu"]
    assert veco[5].command == ["align_words", "200", "cpu", "veco", "dwa"]


def test_new_rows_add_their_flags_and_their_data(catalogs):
    cfg = config()
    rows = {pipeline[0].name: pipeline for pipeline in stages.pipelines(cfg)}
    veco = rows["pretrain-veco"][0].command
    for run, tail in (
        ("alignmlm", ["--align-dictionary", "/run/word-list/train.txt",
                      "--align-heldout", "/run/word-list/heldout.txt"]),
        ("weam", ["--bi-mask-prob", "0.3"]),
    ):  # fmt: skip
        pipeline, row = rows[f"pretrain-{run}"], objective(run)
        # the common pre-training command with its criterion and save dir, then its flags
        common = [x.replace("pretrain/veco", f"pretrain/{run}") for x in veco]
        common[common.index("--criterion") + 1] = row.criterion
        assert pipeline[0].command == common + tail
        # and it translates: veco-init-nmt, the common fine-tuning, BLEU
        assert [s.name for s in pipeline[1:]] == [f"init-{run}", f"finetune-{run}", f"eval-{run}"]
        assert pipeline[1].command[2] == f"/run/pretrain/{run}/checkpoint_last.pt"
    assert stages.needs(cfg) == [WORD_LIST, WORD_ALIGNMENTS]
    assert stages.data(cfg).command == [
        "make_data", "4000", "2", "256", "word_list", "word_alignments"
    ]  # fmt: skip
    assert stages.prepare_command(cfg) == [
        "bash", f"{ROOT}/scripts/prepare-pretraining-data.sh", "--text", "/run/text",
        "--out", "/run/data", "--src", "en", "--tgt", "de", "--vocab-size", "4000",
        "--workers", "2", "--align-with", "eflomal",
    ]  # fmt: skip
    assert stages.word_list_command(cfg) == [
        "veco-gettext-dictionary", "--tgt-lang", "de", "--output", "/run/word-list",
        "--locale-dir", catalogs, "--seed", "1",
    ]  # fmt: skip
    # without the rows: the data stage of before, byte for byte
    off = config(*NO_NEW_ROWS)
    assert stages.needs(off) == [] and stages.data(off).command == ["make_data", "4000", "2", "256"]
    assert stages.prepare_command(off) == stages.prepare_command(cfg)[:-2]
    assert stages.needs(config("--no-weam")) == [WORD_LIST]
    assert stages.needs(config("--no-alignmlm")) == [WORD_ALIGNMENTS]


def test_missing_eflomal_is_one_line():
    stages._check_eflomal(sys.executable)  # the venv has it
    with pytest.raises(ValueError) as info:
        stages._check_eflomal("false")
    assert str(info.value) == (
        "word alignments (--align-with eflomal) need the eflomal package in --python false: "
        "pip install eflomal, or skip the rows that need them (--no-weam)"
    )


def test_gpu_and_fp16_flags():
    cfg = dataclasses.replace(config("--gpu", "--fp16"), jobs=1)
    veco = stages.pipelines(cfg)[0]
    assert "--cpu" not in veco[0].command and "--fp16" in veco[0].command
    assert veco[3].command[-1] == "10"  # evaluate: no --cpu
