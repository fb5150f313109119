"""veco-align, the real console script, on real checkpoints: veco (ca_mlm) and fairseq RoBERTa."""

import re
import shutil

import pytest
import torch

from tests.helpers.refusals import ran
from tests.helpers.runner import REPO, roberta_checkpoint, run
from veco_plugin.cli import align

TEXT = f"{REPO}/tests/fixtures/text"
METHODS = ("ot", "argmax", "itermax")


def _tokenize(line: str) -> str:
    return " ".join(re.findall(r"\w+|[^\w\s]", line))


@pytest.fixture(scope="module")
def pairs(tmp_path_factory):
    """30 real En-De pairs, an empty source line, and one pair too long for the models."""
    en, de = (
        [_tokenize(line) for line in open(f"{TEXT}/valid.{lang}", encoding="utf-8")]
        for lang in ("en", "de")
    )
    src, tgt = en[:30] + ["", " ".join(en[30:])], de[:30] + [de[30], " ".join(de[30:])]
    tmp = tmp_path_factory.mktemp("align_text")
    for name, lines in (("src", src), ("tgt", tgt)):
        (tmp / name).write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return tmp / "src", tmp / "tgt", src, tgt


def _links(lines, src, tgt):
    """Check the output shape: one line per pair, links inside both sentences."""
    assert len(lines) == len(src)
    out = []
    for line, s, t in zip(lines, src, tgt):
        links = [tuple(map(int, link.split("-"))) for link in line.split()]
        assert all(0 <= i < len(s.split()) and 0 <= j < len(t.split()) for i, j in links)
        assert links == sorted(set(links)), line
        out.append(links)
    assert out[30] == []  # the empty source sentence
    assert sum(bool(links) for links in out) == len(out) - 1
    return out


def test_every_method_on_a_veco_checkpoint(pretrain_data, cold_start, pairs, tmp_path, capsys):
    src_file, tgt_file, src, tgt = pairs
    args = ["--path", cold_start, "--spm-model", f"{pretrain_data}/spm.model"]
    args += ["--dict", f"{pretrain_data}/dict.txt", "--src", src_file, "--tgt", tgt_file]
    outputs = {}
    for method in METHODS:  # the first through the installed script, the others through its
        output = tmp_path / f"{method}.align"  # entry point in the test process
        flags = [*args, "--method", method, "--output", output, "--cpu"]
        proc = run("veco-align", flags) if method == METHODS[0] else ran(align, flags, capsys)
        assert proc.stdout == ""
        assert "1 of 32 pairs exceed the model's 96 positions" in proc.stderr
        assert re.search(r"aligned 32 pairs in [\d.]+ s \([\d.]+ pairs/s\)", proc.stderr)
        outputs[method] = output.read_text(encoding="utf-8").splitlines()
        _links(outputs[method], src, tgt)
    # deterministic across runs; stdout holds what --output writes; --dict by any name
    vocab = tmp_path / "vocab.txt"
    shutil.copy(f"{pretrain_data}/dict.txt", vocab)
    args[args.index("--dict") + 1] = vocab
    again = ran(align, [*args, "--batch-size", "32", "--layer", "1"], capsys)
    # exact: 32 and layer 1 are the defaults, so the same batches and the same calls
    assert again.stdout.splitlines() == outputs["ot"]
    # the methods differ: argmax keeps only mutual best pieces, the others add to them
    links = {m: [set(x) for x in _links(outputs[m], src, tgt)] for m in METHODS}
    assert all(a <= b for a, b in zip(links["argmax"], links["itermax"]))
    assert sum(map(len, links["argmax"])) < sum(map(len, links["itermax"]))
    assert links["ot"] != links["argmax"]


def test_a_fairseq_roberta_checkpoint_in_the_released_layout(pretrain_data, pairs, tmp_path):
    """fairseq's own masked_lm RoBERTa, laid out as the released xlmr.base: model.pt,
    dict.txt and sentencepiece.bpe.model in one directory (no --dict, no --spm-model)."""
    src_file, tgt_file, src, tgt = pairs
    trained = roberta_checkpoint(f"{pretrain_data}/mono/en", tmp_path / "train")
    xlmr = tmp_path / "xlmr.tiny"
    xlmr.mkdir()
    shutil.copy(trained, xlmr / "model.pt")
    shutil.copy(f"{pretrain_data}/dict.txt", xlmr / "dict.txt")
    shutil.copy(f"{pretrain_data}/spm.model", xlmr / "sentencepiece.bpe.model")
    proc = run("veco-align", ["--path", xlmr / "model.pt", "--src", src_file, "--tgt", tgt_file])
    assert "1 of 32 pairs exceed the model's 128 positions" in proc.stderr
    _links(proc.stdout.splitlines(), src, tgt)


def _one_line_error(args) -> str:
    proc = run("veco-align", args, check=False)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    line = proc.stderr.strip().splitlines()[-1]
    assert line.startswith("veco-align: error: "), line
    return line


def test_bad_input_is_one_line(pretrain_data, pairs, tmp_path):
    """One run of the real script; the other messages: tests/unit/test_aligner.py."""
    src_file, _, src, _ = pairs
    short = tmp_path / "short.de"
    short.write_text("Ein Satz .\n", encoding="utf-8")
    args = ["--path", tmp_path, "--src", src_file, "--tgt", short]
    proc = run("veco-align", args, check=False)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    line = proc.stderr.strip().splitlines()[-1]
    assert line == (
        f"veco-align: error: --src {src_file} has {len(src)} lines but --tgt {short} has 1; "
        "give line-aligned files, one sentence per line"
    )


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA (--fp16 runs on a GPU)")
def test_fp16_links_as_fp32(pretrain_data, cold_start, tmp_path):
    args = ["--path", cold_start, "--spm-model", f"{pretrain_data}/spm.model"]
    args += ["--dict", f"{pretrain_data}/dict.txt"]
    args += ["--src", f"{TEXT}/valid.en", "--tgt", f"{TEXT}/valid.de"]
    links = {}
    for precision in ("fp32", "fp16"):
        output = tmp_path / f"{precision}.align"
        extra = ["--fp16"] if precision == "fp16" else []
        run("veco-align", [*args, *extra, "--output", output])
        links[precision] = [set(line.split()) for line in output.read_text().splitlines()]
    same = sum(len(a & b) for a, b in zip(links["fp32"], links["fp16"]))
    total = sum(len(a | b) for a, b in zip(links["fp32"], links["fp16"]))
    assert same / max(total, 1) > 0.9, (same, total)
