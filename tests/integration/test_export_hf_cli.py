"""veco-export-hf, the real console script: the exported Hugging Face XLM-R computes what the
fairseq plug-out encoder computes (every layer, the MLM logits) and tokenizes to the same ids."""

import shutil

import pytest
import torch

from tests.helpers.refusals import refused
from tests.helpers.runner import REPO, RESET, pretrain_args, roberta_checkpoint, run
from veco_plugin.checkpoints.encoder import load_encoder
from veco_plugin.cli import export_hf
from veco_plugin.corpora.subwords import spm_encoder
from veco_plugin.evaluation.aer import read_lines
from veco_plugin.evaluation.retrieval import pad_batch, sentence_ids

transformers = pytest.importorskip("transformers")

PROG = "veco-export-hf"
TEXT = f"{REPO}/tests/fixtures/text"
TOL = 1e-5
# 5.x has one XLM-R tokenizer class, backed by the tokenizers library (use_fast is ignored)
ONLY_FAST = int(transformers.__version__.split(".")[0]) >= 5


def _sentences():
    """Real En and De sentences, and lines with digits, placeholders and odd spacing."""
    lines = read_lines(f"{TEXT}/valid.en")[:12] + read_lines(f"{TEXT}/valid.de")[:12]
    return lines + ["Not After: %s", "  Größe:   12,5 MB  ", "Zurück (Alt+←)", ""]


def _fairseq_ids(pretrain_data, dictionary, lines):
    pieces = spm_encoder(f"{pretrain_data}/spm.model")(lines, "")
    return sentence_ids(pieces, dictionary, 10**6)[0]


def _compare(fairseq_path, hf_dir, dict_path, pretrain_data):
    model, dictionary = load_encoder(str(fairseq_path), dict_path)
    ids = _fairseq_ids(pretrain_data, dictionary, _sentences())
    tokens = pad_batch(ids, dictionary.pad())  # (B, T), right-padded
    real = tokens.ne(dictionary.pad())
    with torch.no_grad():
        logits, extra = model(tokens, return_all_hiddens=True)  # plug-out
        fairseq_states = [h.transpose(0, 1) for h in extra["inner_states"]]  # (B, T, C) each
        hf = transformers.XLMRobertaForMaskedLM.from_pretrained(hf_dir).eval()
        out = hf(input_ids=tokens, attention_mask=real.long(), output_hidden_states=True)
        base = transformers.XLMRobertaModel.from_pretrained(hf_dir).eval()
        base_out = base(input_ids=tokens, attention_mask=real.long(), output_hidden_states=True)
    assert (
        len(out.hidden_states)
        == len(fairseq_states)
        == len(model.encoder.sentence_encoder.layers) + 1
    )
    worst = 0.0
    for ours, theirs, plain in zip(fairseq_states, out.hidden_states, base_out.hidden_states):
        worst = max(worst, float((ours - theirs)[real].abs().max()))
        assert torch.equal(theirs[real], plain[real])  # XLMRobertaModel reads the same weights
    assert worst < TOL, worst
    logits_diff = float((logits - out.logits)[real].abs().max())
    assert logits_diff < TOL, logits_diff
    print(f"max |fairseq - transformers|: hidden {worst:.2e}, logits {logits_diff:.2e}")
    return dictionary, ids


def test_a_veco_checkpoint_round_trip(pretrain_data, cold_start, tmp_path, capsys):
    out = tmp_path / "hf"
    dict_path = f"{pretrain_data}/dict.txt"
    proc = run(
        "veco-export-hf",
        ["--path", cold_start, "--spm-model", f"{pretrain_data}/spm.model"]
        + ["--dict", dict_path, "--output", out],
    )
    assert "dropped cross-attention (20 tensors)" in proc.stderr
    dictionary, ids = _compare(cold_start, str(out), dict_path, pretrain_data)
    # the tokenizers: 4.x's slow one (sentencepiece) and fast one (tokenizer.json), 5.x's
    # (tokenizer.json); and, as an older export, from sentencepiece.bpe.model alone
    lines = _sentences() + read_lines(f"{TEXT}/mono.en")[:20] + read_lines(f"{TEXT}/mono.de")[:20]
    ids = _fairseq_ids(pretrain_data, dictionary, lines)
    spm_only = tmp_path / "spm-only"
    shutil.copytree(out, spm_only, ignore=shutil.ignore_patterns("tokenizer.json", "model.*"))
    for directory, fast in [(d, f) for d in (out, spm_only) for f in (False, True)]:
        tokenizer = transformers.AutoTokenizer.from_pretrained(str(directory), use_fast=fast)
        assert tokenizer.is_fast == (fast or ONLY_FAST)
        assert [tokenizer(line)["input_ids"] for line in lines] == ids, (directory, fast)
        assert tokenizer.mask_token_id == dictionary.index("<mask>")
        assert tokenizer.pad_token_id == dictionary.pad()
        assert tokenizer.unk_token_id == dictionary.unk()
    assert dictionary.unk() in {i for row in ids for i in row}  # "←" is no piece: <unk> both ways
    # one-line errors (the entry point in the test process): a non-empty --output, a
    # missing checkpoint
    again = refused(export_hf, ["--path", cold_start, "--output", out], PROG, capsys)
    assert again == (
        f"{PROG}: error: --output {out} is not empty: pass --overwrite or give a new directory"
    )
    args = ["--path", tmp_path / "no.pt", "--output", tmp_path / "x"]
    assert refused(export_hf, args, PROG, capsys) == (
        f"{PROG}: error: --path {tmp_path / 'no.pt'}: no such file"
    )


def test_a_dwa_checkpoint_exports_its_encoder(pretrain_data, cold_start, tmp_path):
    """XLM-Align's checkpoint holds the pointer network next to the encoder: the export
    leaves it out and the encoder still computes what fairseq's does."""
    args = ["--restore-file", cold_start, "--disable-validation", *RESET]
    run("fairseq-train", pretrain_args(pretrain_data, tmp_path / "dwa", "dwa", 3, *args))
    dwa = tmp_path / "dwa" / "checkpoint_last.pt"
    out = tmp_path / "hf"
    dict_path = f"{pretrain_data}/dict.txt"
    spm = f"{pretrain_data}/spm.model"
    proc = run(
        "veco-export-hf",
        ["--path", dwa, "--spm-model", spm, "--dict", dict_path, "--output", out],
    )
    assert "dropping the checkpoint's pointer network" in proc.stderr
    _compare(dwa, str(out), dict_path, pretrain_data)


def test_a_fairseq_roberta_checkpoint_in_the_released_layout(pretrain_data, tmp_path):
    """fairseq's own masked_lm RoBERTa laid out as the released xlmr.base (model.pt, dict.txt,
    sentencepiece.bpe.model in one directory)."""
    trained = roberta_checkpoint(f"{pretrain_data}/mono/en", tmp_path / "train")
    xlmr = tmp_path / "xlmr.tiny"
    xlmr.mkdir()
    shutil.copy(trained, xlmr / "model.pt")
    shutil.copy(f"{pretrain_data}/dict.txt", xlmr / "dict.txt")
    shutil.copy(f"{pretrain_data}/spm.model", xlmr / "sentencepiece.bpe.model")
    out = tmp_path / "hf"
    proc = run("veco-export-hf", ["--path", xlmr / "model.pt", "--output", out])
    assert "cross-attention" not in proc.stderr
    _compare(xlmr / "model.pt", str(out), str(xlmr / "dict.txt"), pretrain_data)
