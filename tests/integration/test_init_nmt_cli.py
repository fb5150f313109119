"""veco-init-nmt end to end with the real fairseq binaries.

One module fixture runs, in a temp dir, on the project's fixture text
(``tests/fixtures/text``: 260 en-de training pairs, 40 valid, 200 monolingual lines
per language; whitespace tokens, one dictionary built from all of it):

1. ``fairseq-preprocess`` into the ``veco_pretraining`` layout (DATA/dict.txt,
   DATA/mono/{en,de}, DATA/bi/en-de) and into a translation data dir with
   ``--joined-dictionary --srcdict DATA/dict.txt`` (test = 13 sentences);
2. ``fairseq-train --task veco_pretraining --arch veco_tiny --criterion ca_mlm``
   (``PretrainingCommand``) for 10 updates, with sizes that no named arch has (``--encoder-layers 3
   --encoder-embed-dim 32 --encoder-ffn-embed-dim 96 --encoder-attention-heads 2``);
3. ``veco-init-nmt --decoder-layers last:1`` (the dictionary is found through the
   checkpoint's ``cfg.task.data``; the arch and every size from the checkpoint);
4. ``fairseq-train`` with exactly the flags ``veco-init-nmt`` printed (``--task
   translation_from_pretrained_veco --arch veco_transformer --encoder-layers 3 ...
   --restore-file INIT --reset-optimizer --reset-dataloader --reset-meters``) for 30
   updates.

The tests then run ``fairseq-generate`` (beam 5, default
``--required-batch-size-multiple 8``) and check every one of the 13 test sentences
is translated, and that mismatched data is refused with one line.
"""

import os
import re
import shlex
from collections import Counter

import pytest

from tests.helpers.refusals import fairseq_refused
from tests.helpers.runner import REPO, USER_DIR
from tests.helpers.runner import run as run_script
from veco_plugin.pretraining_command import PretrainingCommand

TEXT = os.path.join(REPO, "tests", "fixtures", "text")
N_TEST = 13


def _run(script, *args, check=True):
    return run_script(script, list(args), check=check)


def _write_dictionary(path, files):
    counts = Counter()
    for name in files:
        with open(name, encoding="utf-8") as f:
            for line in f:
                counts.update(line.split())
    with open(path, "w", encoding="utf-8") as f:
        for word, count in sorted(counts.items(), key=lambda wc: (-wc[1], wc[0])):
            f.write(f"{word} {count}\n")


def _head(src, dst, n):
    with open(src, encoding="utf-8") as f, open(dst, "w", encoding="utf-8") as o:
        o.writelines(f.readlines()[:n])


COMMON = ["--user-dir", USER_DIR, "--cpu", "--num-workers", "0", "--seed", "1"]
# a size no named arch has (veco_tiny is 2 x 64, FFN 256, 4 heads)
SIZES = ["--encoder-layers", "3", "--encoder-embed-dim", "32", "--encoder-ffn-embed-dim", "96",
         "--encoder-attention-heads", "2"]  # fmt: skip


def printed_flags(init_log):
    """The fairseq-train flags after ``fine-tune with: fairseq-train DATA``."""
    line = next(ln for ln in init_log.splitlines() if "fine-tune with: fairseq-train DATA" in ln)
    return shlex.split(line.split("fairseq-train DATA", 1)[1])


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    root = tmp_path_factory.mktemp("init_nmt")
    text, data, nmt = root / "text", root / "data", root / "nmt"
    text.mkdir()
    for lang in ("en", "de"):
        _head(os.path.join(TEXT, f"valid.{lang}"), text / f"test.{lang}", N_TEST)
    data.mkdir()
    dict_txt = data / "dict.txt"
    sources = [f"{split}.{lang}" for split in ("train", "valid", "mono") for lang in ("en", "de")]
    _write_dictionary(dict_txt, [os.path.join(TEXT, name) for name in sources])
    # fmt: off
    for lang in ("en", "de"):
        _run("fairseq-preprocess", "--only-source", "--srcdict", dict_txt, "--workers", "1",
             "--trainpref", os.path.join(TEXT, f"mono.{lang}"),
             "--validpref", os.path.join(TEXT, f"valid.{lang}"), "--destdir", data / "mono" / lang)
    _run("fairseq-preprocess", "-s", "en", "-t", "de", "--srcdict", dict_txt, "--tgtdict", dict_txt,
         "--workers", "1", "--trainpref", os.path.join(TEXT, "train"),
         "--validpref", os.path.join(TEXT, "valid"), "--destdir", data / "bi" / "en-de")
    _run("fairseq-preprocess", "-s", "en", "-t", "de", "--joined-dictionary", "--srcdict", dict_txt,
         "--workers", "1", "--trainpref", os.path.join(TEXT, "train"),
         "--validpref", os.path.join(TEXT, "valid"), "--testpref", text / "test", "--destdir", nmt)

    pre = root / "pretrain"
    # Adam at fairseq's defaults, a constant lr, the task's default positions (512, 128)
    pretrain = PretrainingCommand(
        data=str(data), save_dir=str(pre), criterion="ca_mlm", updates=10, warmup=None,
        max_tokens=1024, max_positions=512, bi_positions=128, lr="1e-3", user_dir=USER_DIR,
        size=tuple(SIZES), adam_betas=None, adam_eps=None, clip_norm=None, validate="never",
        save_every=0,
    )
    _run("fairseq-train", *pretrain.args())

    init = root / "init" / "init.pt"
    init_log = _run("veco-init-nmt", "--pretrained", pre / "checkpoint_last.pt", "--output", init,
                    "--decoder-layers", "last:1").stderr

    ft = root / "finetune"
    train_log = _run(
        "fairseq-train", nmt, *printed_flags(init_log), "--cpu", "--num-workers", "0",
        "--seed", "1", "--criterion", "label_smoothed_cross_entropy", "--label-smoothing", "0.1",
        "--optimizer", "adam", "--lr", "5e-4", "--max-tokens", "1024", "--max-update", "30",
        "--save-dir", ft, "--no-epoch-checkpoints", "--log-format", "simple",
        "--log-interval", "10",
    ).stdout
    return {"root": root, "data": data, "nmt": nmt, "init": init, "init_log": init_log,
            "checkpoint": ft / "checkpoint_last.pt", "train_log": train_log}
    # fmt: on


def _generate_args(nmt, path, *extra):
    return [
        nmt, *COMMON, "--task", "translation_from_pretrained_veco", "--path", path,
        "--gen-subset", "test", "--beam", "5", "--batch-size", "64", "--max-len-b", "30", *extra,
    ]  # fmt: skip


def _generate(nmt, path, *extra):
    return _run("fairseq-generate", *_generate_args(nmt, path, *extra))


def _hypothesis_ids(output):
    return sorted(int(m.group(1)) for m in re.finditer(r"^H-(\d+)\t", output, re.M))


def test_init_log_and_restore(run):
    log = run["init_log"]
    assert "(veco): decoder layers <- pre-trained layers 2" in log
    assert "no module starts random" in log
    assert f"--arch veco_transformer {' '.join(SIZES)} --decoder-layers 1 --restore-file" in log
    assert "not used: encoder.lm_head" in log
    assert f"Loaded checkpoint {run['init']} (epoch 1 @ 0 updates)" in run["train_log"]
    assert "num_updates 30" in run["train_log"]
    assert run["checkpoint"].exists() and not list(run["checkpoint"].parent.glob("*.tmp"))


def test_generate_translates_every_test_sentence(run):
    proc = _generate(run["nmt"], run["checkpoint"])
    assert _hypothesis_ids(proc.stdout) == list(range(N_TEST))
    assert f"Translated {N_TEST} sentences" in proc.stdout + proc.stderr
    # the initialized checkpoint itself is a valid fairseq-generate model too
    out = _generate(run["nmt"], run["init"]).stdout
    assert _hypothesis_ids(out) == list(range(N_TEST))


def test_data_with_another_dictionary_is_refused(run):
    other = run["root"] / "other"
    other.mkdir()
    with open(run["data"] / "dict.txt", encoding="utf-8") as f:
        lines = f.readlines()
    (other / "dict.txt").write_text("".join(lines[1:] + lines[:1]), encoding="utf-8")
    _run("fairseq-preprocess", "-s", "en", "-t", "de", "--joined-dictionary",
         "--srcdict", other / "dict.txt", "--workers", "1",
         "--testpref", run["root"] / "text" / "test", "--destdir", other / "bin")  # fmt: skip
    last = fairseq_refused("fairseq-generate", _generate_args(other / "bin", run["checkpoint"]))
    assert re.match(
        r"fairseq-generate: error: .*the data dictionary is not the checkpoint's .*"
        r"fairseq-preprocess --joined-dictionary --srcdict <pretrained dict.txt>.*"
        r"veco-reduce-vocab",
        last,
    )


def test_interactive_agrees_with_generate(run):
    """fairseq-interactive (raw text; the task prepends <s> to each source) and
    fairseq-generate (binarized test set) give the same hypotheses. The raw text is the
    file fairseq-interactive reads (``--input``; its stdin goes through the same reader),
    so that the command starts warm like the others here."""
    gen = _generate(run["nmt"], run["checkpoint"], "--batch-size", "1").stdout
    hyps = dict(re.findall(r"^H-(\d+)\t\S+\t(.*)$", gen, re.M))
    proc = _run(
        "fairseq-interactive", run["nmt"], *COMMON, "--task", "translation_from_pretrained_veco",
        "-s", "en", "-t", "de", "--path", run["checkpoint"], "--beam", "5", "--max-len-b", "30",
        "--buffer-size", "1", "--batch-size", "1", "--input", run["root"] / "text" / "test.en",
    )  # fmt: skip
    interactive = re.findall(r"^H-\d+\t\S+\t(.*)$", proc.stdout, re.M)
    assert len(interactive) == N_TEST
    assert interactive == [hyps[str(i)] for i in range(N_TEST)]
