"""veco-init-nmt's checkpoint (``veco_plugin.nmt_init.writer``, through the console
script's ``main``): it loads in fairseq and is exact, any size, the output bias, XLM-R
input in the old layout, tied layers, one-line errors, and data it refuses."""

import logging
import os
import re

import pytest
import torch
from fairseq import checkpoint_utils

from tests.helpers.nmt import (
    TOL,
    build_nmt,
    dictionary_files,
    max_diff,
    run_init_nmt,
    save_pretrained,
    streams,
    tiny_roberta,
    translation_task,
)
from tests.helpers.toy import ToyTask, build, model_args, random_tokens
from veco_plugin.checkpoints.trusted_load import load_trusted
from veco_plugin.cli import init_nmt
from veco_plugin.models.veco_transformer import VecoTransformerModel, dictionary_digest
from veco_plugin.nmt_init import NmtInitError


@pytest.fixture
def veco_checkpoint(tmp_path):
    d = dictionary_files(tmp_path)
    veco = build("veco_tiny", d, seed=1).eval()
    path = tmp_path / "veco.pt"
    save_pretrained(veco, model_args("veco_tiny"), path)
    return veco, d, str(path)


def test_cli_checkpoint_loads_in_fairseq_and_is_exact(veco_checkpoint, tmp_path):
    veco, d, path = veco_checkpoint
    out = tmp_path / "nmt" / "init.pt"
    run_init_nmt("--pretrained", path, "--output", str(out), "--decoder-layers", "last:1")
    data = tmp_path / "data"
    data.mkdir()
    task = translation_task(data, str(tmp_path / "dict.txt"))
    assert task.src_dict.symbols == d.symbols  # <mask> appended, ids line up
    models, cfg = checkpoint_utils.load_model_ensemble([str(out)], task=task)
    nmt = models[0].eval()
    assert cfg.model._name == "veco_transformer_tiny" and cfg.model.decoder_layers == 1
    assert int(nmt.dictionary_digest) == dictionary_digest(d.symbols)
    x = random_tokens(d, 2, 9, seed=1, pad_tail=2)
    y = random_tokens(d, 2, 5, seed=2)
    _, _, enc, _ = streams(veco, nmt, x, y)
    with torch.no_grad():
        h = veco.sentence_encoder(x)["encoder_out"][0]
    assert max_diff(enc, h, x, d.pad()) <= TOL


def test_cli_any_size_from_the_checkpoint(tmp_path, caplog):
    """A size no named arch has (3 layers x 32, FFN 96, 2 heads): veco_transformer with
    every size from the checkpoint, the flags printed, exact H and S streams."""
    d = dictionary_files(tmp_path)
    sizes = dict(encoder_layers=3, encoder_embed_dim=32, encoder_ffn_embed_dim=96,
                 encoder_attention_heads=2)  # fmt: skip
    veco = build("veco_tiny", d, seed=5, **sizes).eval()
    save_pretrained(veco, model_args("veco_tiny", **sizes), tmp_path / "veco.pt")
    out = tmp_path / "init.pt"
    with caplog.at_level(logging.INFO, logger="veco_plugin.cli.init_nmt"):
        run_init_nmt("--pretrained", str(tmp_path / "veco.pt"), "--output", str(out))
    flags = (
        "--arch veco_transformer --encoder-layers 3 --encoder-embed-dim 32 "
        "--encoder-ffn-embed-dim 96 --encoder-attention-heads 2 --decoder-layers 3"
    )
    assert flags in caplog.text
    data = tmp_path / "data"
    data.mkdir()
    models, cfg = checkpoint_utils.load_model_ensemble(
        [str(out)], task=translation_task(data, str(tmp_path / "dict.txt"))
    )
    assert cfg.model._name == "veco_transformer"
    assert (cfg.model.decoder_embed_dim, cfg.model.decoder_attention_heads) == (32, 2)
    nmt = models[0].eval()
    assert nmt.decoder.layers[0].encoder_attn.num_heads == 2
    x = random_tokens(d, 3, 9, seed=1, pad_tail=2)
    y = random_tokens(d, 3, 6, seed=2, pad_tail=1)
    h, s, enc, dec = streams(veco, nmt, x, y)
    assert max_diff(enc, h, x, d.pad()) <= TOL and max_diff(dec, s, y, d.pad()) <= TOL
    with pytest.raises(NmtInitError, match="is 2 layers x 64.*use --arch veco_transformer "):
        run_init_nmt("--pretrained", tmp_path / "veco.pt", "--output", out,
                     "--arch", "veco_transformer_tiny")  # fmt: skip
    assert "dropped the pre-training LM head (dense + GELU + LayerNorm + output bias)" in (
        caplog.text
    )


def test_cli_keep_output_bias(veco_checkpoint, tmp_path, caplog):
    veco, _, path = veco_checkpoint
    out = tmp_path / "bias.pt"
    with caplog.at_level(logging.INFO, logger="veco_plugin.cli.init_nmt"):
        ckpt = run_init_nmt("--pretrained", path, "--output", str(out), "--keep-output-bias")
    assert "--decoder-layers 2 --decoder-output-bias --max-source-positions 64" in caplog.text
    assert "dense + GELU + LayerNorm: the decoder predicts from the tied embeddings plus" in (
        caplog.text
    )
    assert ckpt["extra_state"]["veco_init_nmt"]["kept_output_bias"]
    data = tmp_path / "data"
    data.mkdir()
    models, cfg = checkpoint_utils.load_model_ensemble(
        [str(out)], task=translation_task(data, str(tmp_path / "dict.txt"))
    )
    assert cfg.model.decoder_output_bias
    assert torch.equal(models[0].decoder.output_projection.bias, veco.encoder.lm_head.bias)


def test_cli_logs_random_cross_attention_for_roberta(tmp_path, caplog):
    d = dictionary_files(tmp_path)
    roberta = tiny_roberta(d)
    args = model_args("roberta", encoder_layers=2, encoder_embed_dim=64,
                      encoder_ffn_embed_dim=256, encoder_attention_heads=4)  # fmt: skip
    # the old fairseq XLM-R layout: decoder.sentence_encoder.*, emb_layer_norm
    state = {
        k.replace("encoder.", "decoder.", 1).replace("layernorm_embedding", "emb_layer_norm"): v
        for k, v in roberta.state_dict().items()
    }
    torch.save({"model": state, "args": args, "cfg": None}, tmp_path / "model.pt")
    with caplog.at_level(logging.INFO, logger="veco_plugin.cli.init_nmt"):
        out = run_init_nmt(
            "--pretrained", str(tmp_path / "model.pt"), "--output", str(tmp_path / "i.pt")
        )
    assert "4 modules start random (no cross-attention in" in caplog.text
    assert "decoder.layers.0.encoder_attn, decoder.layers.0.encoder_attn_layer_norm" in caplog.text
    assert out["extra_state"]["veco_init_nmt"]["source_kind"] == "xlmr"
    assert torch.equal(
        out["model"]["encoder.layernorm_embedding.weight"],
        roberta.state_dict()["encoder.sentence_encoder.layernorm_embedding.weight"],
    )


def test_cli_tie_layers_round_trip(veco_checkpoint, tmp_path):
    _, _, path = veco_checkpoint
    out = tmp_path / "tied.pt"
    ckpt = run_init_nmt(
        "--pretrained", path, "--output", str(out), "--decoder-layers", "1,", "--tie-layers"
    )
    assert ckpt["cfg"]["model"].tie_decoder_to_encoder_layers == "1"
    data = tmp_path / "data"
    data.mkdir()
    models, _ = checkpoint_utils.load_model_ensemble(
        [str(out)], task=translation_task(data, str(tmp_path / "dict.txt"))
    )
    assert models[0].decoder.layers[0].fc1 is models[0].encoder.layers[1].fc1


def test_cli_bad_input_one_line_errors(veco_checkpoint, tmp_path, capsys):
    _, _, path = veco_checkpoint
    out = str(tmp_path / "x.pt")
    cases = [
        (["--decoder-layers", "last:3"], "between 1 and the pre-trained depth 2"),
        (["--decoder-layers", "0,7"], "layer 7 out of range"),
        (["--arch", "veco_transformer_base"], "is 12 layers x 768.*--arch veco_transformer_tiny"),
        (["--arch", "transformer_tiny"], "unknown; choose one of"),
    ]
    for extra, message in cases:
        with pytest.raises(NmtInitError, match=message):
            run_init_nmt("--pretrained", path, "--output", out, *extra)
    other = tmp_path / "other"
    other.mkdir()
    dictionary_files(other, n_words=40)
    with pytest.raises(NmtInitError, match="45 types with <mask> but the checkpoint's embeddings"):
        run_init_nmt("--pretrained", path, "--output", out, "--dict", str(other / "dict.txt"))
    torch.save({"model": {"decoder.embed_tokens.weight": torch.zeros(3, 2)}}, tmp_path / "t.pt")
    with pytest.raises(NmtInitError, match="not a veco/XLM-R/RoBERTa checkpoint"):
        run_init_nmt("--pretrained", str(tmp_path / "t.pt"), "--output", out)
    assert not os.path.exists(out)
    with pytest.raises(SystemExit) as exited:
        init_nmt.cli_main(["--pretrained", path, "--output", out, "--decoder-layers", "9,"])
    assert exited.value.code == 1
    assert re.match("^veco-init-nmt: error: .*out of range", capsys.readouterr().err)


def test_mismatched_data_dictionary_is_refused(veco_checkpoint, tmp_path):
    _, d, path = veco_checkpoint
    out = tmp_path / "init.pt"
    run_init_nmt("--pretrained", path, "--output", str(out))
    shuffled = tmp_path / "shuffled"
    shuffled.mkdir()
    dictionary_files(shuffled, shuffle=True)  # same size, other order
    task = translation_task(shuffled, str(shuffled / "dict.txt"))
    with pytest.raises(ValueError, match="not the checkpoint's.*--joined-dictionary --srcdict"):
        checkpoint_utils.load_model_ensemble([str(out)], task=task)
    # a model built with other flags than the checkpoint's: one line naming the flag
    with pytest.raises(ValueError, match="2 decoder layers, the model 1: pass the --decoder-lay"):
        nmt = build_nmt(d, 1)
        nmt.load_state_dict(load_trusted(str(out))["model"])
    with pytest.raises(ValueError, match="64 source positions, the model 512: pass --max-source"):
        args = model_args("veco_transformer_tiny", decoder_layers=2)
        VecoTransformerModel.build_model(args, ToyTask(d)).load_state_dict(
            load_trusted(str(out))["model"]
        )
    # a checkpoint without the digest (another tool) loads, with a warning
    state = load_trusted(str(out))
    del state["model"]["dictionary_digest"]
    torch.save(state, tmp_path / "no_digest.pt")
    models, _ = checkpoint_utils.load_model_ensemble([str(tmp_path / "no_digest.pt")], task=task)
    assert int(models[0].dictionary_digest) == dictionary_digest(task.src_dict.symbols)
    smaller = tmp_path / "smaller"
    smaller.mkdir()
    dictionary_files(smaller, n_words=30)
    task = translation_task(smaller, str(smaller / "dict.txt"))
    with pytest.raises(ValueError, match="55 rows but the data dictionary.*35 types.*reduce-vocab"):
        checkpoint_utils.load_model_ensemble([str(out)], task=task)


def test_printed_flags_are_the_models():
    from veco_plugin.nmt_init.writer import PLUGIN_DIR, model_flags, train_flags

    flags = model_flags("veco_transformer", ["--encoder-layers", "3"], 1, [2], output_bias=True)
    assert flags == [
        "--arch", "veco_transformer", "--encoder-layers", "3", "--decoder-layers", "1",
        "--tie-decoder-to-encoder-layers", "2", "--decoder-output-bias",
    ]  # fmt: skip
    assert train_flags(model_flags("veco_transformer_tiny", [], 2, None), 512, "i.pt") == (
        f"--user-dir {PLUGIN_DIR} --task translation_from_pretrained_veco "
        "--arch veco_transformer_tiny --decoder-layers 2 "
        "--restore-file i.pt --reset-optimizer --reset-dataloader --reset-meters"
    )
    assert "--decoder-layers 2 --max-source-positions 64 --max-target-positions 64 --restore" in (
        train_flags(model_flags("veco_transformer_tiny", [], 2, None), 64, "i.pt")
    )
