"""veco-import-hf, the real command line, on a Hugging Face XLM-R directory built here (the
published layout at veco_tiny's sizes, random weights): stock fairseq, in a process without
the plugin and with torch's weights-only loading, reads the result and computes and
tokenizes what transformers does; veco-align, veco-retrieve, veco-init-nmt (their entry
points, in the test process) and ``--pretrained-xlmr`` take it; bad input is one line."""

import os
import subprocess
import sys

import pytest
import torch

from tests.helpers.hf_xlmr import TEXT, hf_dir, xlmr_spm
from tests.helpers.refusals import ran
from tests.helpers.runner import REPO, env, run
from tests.helpers.toy import build
from veco_plugin.checkpoints.encoder import load_encoder
from veco_plugin.cli import align, init_nmt, retrieve
from veco_plugin.models.veco import load_xlmr_into_veco

pytest.importorskip("transformers")

TINY = dict(hidden_size=64, intermediate_size=256, num_attention_heads=4)  # veco_tiny's

# stock fairseq and transformers only: the same features, logits and token ids
STOCK = """
import sys, torch, transformers
from fairseq.models.roberta import XLMRModel
hf_dir, out, text = sys.argv[1:]
xlmr = XLMRModel.from_pretrained(out, checkpoint_file="model.pt").eval()
hf = transformers.XLMRobertaForMaskedLM.from_pretrained(hf_dir).eval()
tokenizer = transformers.AutoTokenizer.from_pretrained(hf_dir)
lines = open(text, encoding="utf-8").read().splitlines()[:16] + ["Zurück (Alt+←)  12,5 MB"]
ids = [xlmr.encode(line).tolist() for line in lines]
assert ids == [tokenizer(line)["input_ids"] for line in lines]
tokens = torch.full((len(ids), max(map(len, ids))), 1)
for row, line in zip(tokens, ids):
    row[: len(line)] = torch.tensor(line)
real = tokens.ne(1)
with torch.no_grad():
    logits, extra = xlmr.model(tokens)
    features = xlmr.extract_features(tokens)
    theirs = hf(input_ids=tokens, attention_mask=real.long(), output_hidden_states=True)
hidden = float((features - theirs.hidden_states[-1])[real].abs().max())
mlm = float((logits - theirs.logits)[real].abs().max())
print(f"max |fairseq - transformers|: last hidden {hidden:.2e}, MLM logits {mlm:.2e}")
assert hidden < 1e-5 and mlm < 1e-5
"""


def _import(*args, check=True):
    """veco-import-hf ``args`` (started warm, as ``run`` starts the other commands)."""
    proc = run("veco-import-hf", list(args), check=False, cwd=REPO)
    if check:
        assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


@pytest.fixture(scope="module")
def imported(tmp_path_factory):
    """HF_DIR (an XLMRobertaForMaskedLM with tokenizer.json) and its import OUT."""
    root = tmp_path_factory.mktemp("import_cli")
    hf_dir(root / "hf", "XLMRobertaForMaskedLM", xlmr_spm(root), **TINY)
    proc = _import(root / "hf", "--out", root / "out")
    assert "mapped 41 transformers tensors of 2 layers" in proc.stderr
    assert "folded the token-type embedding" in proc.stderr
    return root / "hf", root / "out"


def test_stock_fairseq_reads_it_and_computes_what_transformers_computes(imported):
    hf, out = imported
    stock = dict(env(), PYTHONPATH="")  # neither the plugin nor its torch.load patch
    proc = subprocess.run(
        [sys.executable, "-c", STOCK, str(hf), str(out), f"{TEXT}/valid.de"],
        capture_output=True,
        text=True,
        cwd=str(out),
        env=stock,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    print(proc.stdout)


def test_the_plugins_commands_take_it(imported, tmp_path, capsys):
    """Through the commands' entry points in the test process (no start-up of torch each)."""
    _, out = imported
    model_pt = out / "model.pt"
    args = ["--path", model_pt, "--src", f"{TEXT}/valid.en", "--tgt", f"{TEXT}/valid.de", "--cpu"]
    aligned = ran(align, args, capsys).stdout
    assert len(aligned.splitlines()) == len(open(f"{TEXT}/valid.en").read().splitlines())
    assert ran(retrieve, args, capsys).stdout.startswith("src->tgt top-1 accuracy ")
    nmt = tmp_path / "nmt.pt"
    ran(init_nmt, ["--pretrained", model_pt, "--output", nmt], capsys)
    assert nmt.is_file()
    # --pretrained-xlmr: what veco_pretraining's build_model does with the file
    fairseq_model, dictionary = load_encoder(str(model_pt))
    veco = build("veco_tiny", dictionary, seed=1)
    state = torch.load(model_pt, weights_only=True)["model"]
    load_xlmr_into_veco(veco, state, f"--pretrained-xlmr {model_pt}")
    ours = veco.state_dict()
    for key, value in fairseq_model.state_dict().items():
        assert torch.equal(ours[key], value), key


def test_bad_input_is_one_line(imported, tmp_path, capsys):
    """The command's own error path (run_cli), in-process: the fixture ran the process."""
    from veco_plugin.cli.import_hf import cli_main

    hf, _ = imported
    afile = tmp_path / "afile"
    afile.write_text("")
    (tmp_path / "bert").mkdir()
    (tmp_path / "bert" / "config.json").write_text('{"model_type": "bert"}')
    cases = (
        ([hf, "--out", afile], f"--out {afile} is a file, not a directory: give a directory"),
        ([tmp_path / "missing", "--out", tmp_path / "o1"], f"{tmp_path / 'missing'}: no such"),
        ([tmp_path / "bert", "--out", tmp_path / "o2"], "config.json: model_type 'bert', not"),
    )
    for argv, message in cases:
        with pytest.raises(SystemExit) as exit_info:
            cli_main([str(a) for a in argv])
        assert exit_info.value.code == 1
        last = capsys.readouterr().err.strip().splitlines()[-1]
        assert last.startswith("veco-import-hf: error: ") and message in last, last
    assert not os.path.exists(tmp_path / "o1") and not os.path.exists(tmp_path / "o2")
