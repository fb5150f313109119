"""The quickstart's stages and pipelines: read from the table of objectives, with the
exact commands of the bash quickstart (the README repeats them)."""

import dataclasses

from tests.helpers.quickstart import config
from veco_plugin.objectives import OBJECTIVES, Objective
from veco_plugin.quickstart import stages
from veco_plugin.quickstart.options import PACKAGE_DIR


def _names(cfg):
    return [[stage.name for stage in pipeline] for pipeline in stages.pipelines(cfg)]


def test_default_pipelines_from_the_table():
    cfg = config()
    assert stages.inits(cfg) == ["veco", "xlm", "random"]
    assert _names(cfg) == [
        ["pretrain-veco", "init-veco", "finetune-veco", "eval-veco", "pretrain-dwa", "align"],
        ["pretrain-xlm", "init-xlm", "finetune-xlm", "eval-xlm"],
        ["finetune-random", "eval-random"],
    ]
    assert stages.labels()["random"] == "random initialization"
    assert stages.labels()["veco"] == OBJECTIVES[0].label


def test_flags_that_drop_rows():
    assert _names(config("--no-xlm")) == [
        ["pretrain-veco", "init-veco", "finetune-veco", "eval-veco", "pretrain-dwa", "align"],
        ["finetune-random", "eval-random"],
    ]
    assert stages.inits(config("--no-xlm")) == ["veco", "random"]
    assert _names(config("--dwa-updates", "0"))[0] == [
        "pretrain-veco", "init-veco", "finetune-veco", "eval-veco"
    ]  # fmt: skip


def test_adding_an_objective_is_one_row(monkeypatch):
    row = Objective("weam", "WEAM (weam)", run="weam", starts_from="xlm", aligns=True)
    monkeypatch.setattr(stages, "OBJECTIVES", OBJECTIVES + (row,))
    cfg = config()
    assert stages.inits(cfg) == ["veco", "xlm", "weam", "random"]
    names = _names(cfg)
    assert names[1] == [
        "pretrain-xlm", "init-xlm", "finetune-xlm", "eval-xlm",
        "pretrain-weam", "init-weam", "finetune-weam", "eval-weam", "align",
    ]  # fmt: skip
    align = stages.pipelines(cfg)[1][-1]
    assert align.command[-2:] == ["xlm", "weam"]  # before (starts_from), after
    pretrain = stages.pipelines(cfg)[1][4]
    assert pretrain.command[pretrain.command.index("--criterion") + 1] == "weam"
    assert "/run/pretrain/xlm/checkpoint_last.pt" in pretrain.command
    assert stages.inits(config("--no-xlm")) == ["veco", "random"]  # its start is off


def test_default_commands_are_the_bash_quickstarts():
    cfg = config()
    veco, xlm, random = stages.pipelines(cfg)
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


def test_gpu_and_fp16_flags():
    cfg = dataclasses.replace(config("--gpu", "--fp16"), jobs=1)
    veco = stages.pipelines(cfg)[0]
    assert "--cpu" not in veco[0].command and "--fp16" in veco[0].command
    assert veco[3].command[-1] == "10"  # evaluate: no --cpu
