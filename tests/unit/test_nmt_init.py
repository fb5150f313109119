"""veco -> veco_transformer initialization: exactness, key map, layer specs, tying, CLI.

Exactness (paper §3.2, Figure 3): after initialization the encoder reproduces the
pre-trained H stream and the decoder, run with full context (no future mask), the S
stream of y conditioned on x, both on padded batches with dropout 0.
"""

import logging
import os
from argparse import Namespace

import pytest
import torch
from fairseq import checkpoint_utils
from fairseq.data import Dictionary, LanguagePairDataset

from tests.helpers.toy import (
    ToyTask,
    build,
    model_args,
    random_tokens,
    stream_logits,
    toy_dictionary,
)
from veco_plugin.cli import init_nmt
from veco_plugin.models.veco_transformer import VecoTransformerModel
from veco_plugin.nmt_init import (
    TARGET_BUFFERS,
    NmtInitError,
    dictionary_digest,
    init_nmt_state,
    nmt_module_map,
    parse_decoder_layers,
)
from veco_plugin.tasks.translation_from_pretrained_veco import (
    TranslationFromPretrainedVecoConfig,
    TranslationFromPretrainedVecoTask,
)
from veco_plugin.trusted_load import load_trusted

TOL = 1e-5


def build_nmt(
    dictionary, decoder_layers=2, tied=None, seed=0, arch="veco_transformer_tiny", bias=False
):
    torch.manual_seed(seed)
    args = model_args(
        arch,
        max_source_positions=64,
        max_target_positions=64,
        decoder_layers=decoder_layers,
        tie_decoder_to_encoder_layers=",".join(map(str, tied)) if tied else None,
        decoder_output_bias=bias,
    )
    return VecoTransformerModel.build_model(args, ToyTask(dictionary))


def initialized(veco, dictionary, layers, tied=False):
    nmt = build_nmt(dictionary, len(layers), tied=layers if tied else None, seed=7)
    state, report = init_nmt_state(veco.state_dict(), nmt.state_dict(), layers)
    nmt.load_state_dict(state, strict=True)
    return nmt.eval(), report


def streams(veco, nmt, x, y):
    """Pre-trained H(x), S(y | H(x)) and their LM logits; NMT encoder(x), decoder(y)."""
    enc = veco.sentence_encoder
    pad = enc.padding_idx
    with torch.no_grad():
        h = enc(x)["encoder_out"][0]  # (Tx, B, C)
        s, _ = enc.forward_stream(y, h, x.eq(pad))  # (Ty, B, C)
        encoder_out = nmt.encoder(x, src_lengths=x.ne(pad).sum(1))
        features, _ = nmt.decoder(
            y, encoder_out=encoder_out, features_only=True, full_context_alignment=True
        )  # (B, Ty, C)
    return h, s, encoder_out["encoder_out"][0], features.transpose(0, 1)


def max_diff(a, b, tokens, pad):
    """max |a - b| over non-pad positions; a, b: (T, B, C), tokens: (B, T)."""
    keep = tokens.ne(pad).t().unsqueeze(-1)
    return ((a - b) * keep).abs().max().item()


@pytest.mark.parametrize(
    "spec,tied",
    [("all", False), ("last:1", False), ("first:1", False), ("1,0", False), ("all", True)],
)
def test_encoder_is_h_stream_and_decoder_is_s_stream(spec, tied):
    d = toy_dictionary()
    veco = build("veco_tiny", d, seed=1).eval()
    layers = parse_decoder_layers(spec, 2)
    nmt, report = initialized(veco, d, layers, tied)
    assert report.random_modules == ()
    x = random_tokens(d, 4, 11, seed=2, pad_tail=3)
    y = random_tokens(d, 4, 8, seed=3, pad_tail=2)
    h, s, enc, dec = streams(veco, nmt, x, y)
    assert max_diff(enc, h, x, d.pad()) <= TOL
    if layers == [0, 1]:
        # the full decoder is the S stream: y conditioned on x
        assert max_diff(dec, s, y, d.pad()) <= TOL
    else:
        # a decoder built from a subset of layers is the S stream of those layers
        sub = build("veco_tiny", d, seed=1, encoder_layers=len(layers)).eval()
        full = veco.state_dict()
        sub_state = {k: v for k, v in full.items() if ".layers." not in k}
        for j, i in enumerate(layers):
            old, new = f"sentence_encoder.layers.{i}.", f"sentence_encoder.layers.{j}."
            sub_state.update({k.replace(old, new): v for k, v in full.items() if old in k})
        sub.load_state_dict(sub_state, strict=True)
        with torch.no_grad():
            s_sub, _ = sub.sentence_encoder.forward_stream(y, h, x.eq(d.pad()))
        assert max_diff(dec, s_sub, y, d.pad()) <= TOL


def test_logits_match_two_stream_forward():
    """Through the public API: H logits of x and S logits of y (rows B: of the pair)."""
    d = toy_dictionary()
    veco = build("veco_tiny", d, seed=11).eval()
    nmt, _ = initialized(veco, d, [0, 1])
    pair = random_tokens(d, 6, 9, seed=4, pad_tail=2)  # rows 0-2 = x, rows 3-5 = y
    x, y = pair[:3], pair[3:]
    with torch.no_grad():
        h_logits, s_logits = stream_logits(veco, pair)  # (6, T, V) each
        _, _, enc, dec = streams(veco, nmt, x, y)
        lm = veco.encoder.output_layer
        keep_x, keep_y = x.ne(d.pad()), y.ne(d.pad())
        diff_h = (lm(enc.transpose(0, 1)) - h_logits[:3])[keep_x].abs().max().item()
        diff_s = (lm(dec.transpose(0, 1)) - s_logits[3:])[keep_y].abs().max().item()
    assert diff_h <= TOL and diff_s <= TOL


def test_output_bias_is_the_lm_head_bias():
    """--decoder-output-bias <- encoder.lm_head.bias (rows mapped like the embeddings);
    logits = tied embeddings . features + that bias, exactly."""
    d = toy_dictionary()
    veco = build("veco_tiny", d, seed=3).eval()
    with torch.no_grad():
        veco.encoder.lm_head.bias.normal_()
    nmt = build_nmt(d, 2, seed=7, bias=True)
    rows = list(range(d.nspecial)) + list(range(len(d) - 1, d.nspecial - 1, -1))
    state, report = init_nmt_state(veco.state_dict(), nmt.state_dict(), [0, 1], rows)
    bias = veco.encoder.lm_head.bias.detach()
    assert torch.equal(state["decoder.output_projection.bias"], bias[rows])
    assert report.kept_output_bias and "encoder.lm_head" in report.dropped_modules
    state, _ = init_nmt_state(veco.state_dict(), nmt.state_dict(), [0, 1])
    nmt.load_state_dict(state, strict=True)
    nmt.eval()
    x, y = random_tokens(d, 2, 7, seed=1), random_tokens(d, 2, 5, seed=2)
    with torch.no_grad():
        logits, _ = nmt(x, x.ne(d.pad()).sum(1), y)
        features, _ = nmt.decoder(y, encoder_out=nmt.encoder(x), features_only=True)
    expected = features @ nmt.decoder.embed_tokens.weight.t() + bias
    assert torch.allclose(logits, expected, atol=1e-6)
    plain, report = init_nmt_state(veco.state_dict(), build_nmt(d, 2).state_dict(), [0, 1])
    assert "decoder.output_projection.bias" not in plain and not report.kept_output_bias


def test_layer_specs():
    assert parse_decoder_layers("all", 24) == list(range(24))
    assert parse_decoder_layers("first:6", 24) == [0, 1, 2, 3, 4, 5]
    assert parse_decoder_layers("last:6", 24) == [18, 19, 20, 21, 22, 23]
    assert parse_decoder_layers("18,19,20,21,22,23", 24) == [18, 19, 20, 21, 22, 23]
    assert parse_decoder_layers("last:3", 24) == [21, 22, 23]
    for bad, words in [
        ("last:25", "between 1 and"),
        ("first:0", "between 1 and"),
        ("24", "out of range"),
        ("-1,2", "out of range"),
        ("3,3", "twice"),
        ("middle:2", "expected all"),
        ("last:x", "integer"),
    ]:
        with pytest.raises(NmtInitError, match=words):
            parse_decoder_layers(bad, 24)


def test_last_n_copies_the_last_layers():
    d = toy_dictionary()
    veco = build("veco_tiny", d, seed=5)
    nmt, _ = initialized(veco, d, parse_decoder_layers("last:1", 2))
    src = veco.sentence_encoder.layers[1]
    dst = nmt.decoder.layers[0]
    assert torch.equal(dst.self_attn.q_proj.weight, src.self_attn.q_proj.weight)
    assert torch.equal(dst.fc2.weight, src.fc2.weight)
    assert torch.equal(dst.encoder_attn.k_proj.weight, src.cross_attn.k_proj.weight)
    assert torch.equal(dst.encoder_attn_layer_norm.weight, src.cross_attn_layer_norm.weight)
    assert not torch.equal(dst.fc2.weight, veco.sentence_encoder.layers[0].fc2.weight)


def test_key_map_is_explicit_and_complete():
    m = nmt_module_map(2, [1])
    assert m["decoder.layers.0.encoder_attn"] == "encoder.sentence_encoder.layers.1.cross_attn"
    assert m["decoder.output_projection"] == "encoder.sentence_encoder.embed_tokens"
    assert m["encoder.layers.1.fc1"] == "encoder.sentence_encoder.layers.1.fc1"
    d = toy_dictionary()
    nmt = build_nmt(d, 1)
    # every weight of the target lives under a mapped module; the rest are buffers
    unmapped = [k for k in nmt.state_dict() if not any(k.startswith(t + ".") for t in m)]
    assert sorted(unmapped) == sorted(TARGET_BUFFERS)


def test_missing_and_unexpected_keys_fail():
    d = toy_dictionary()
    veco = build("veco_tiny", d, seed=1)
    nmt = build_nmt(d, 2)
    good = veco.state_dict()
    for missing in (
        "encoder.sentence_encoder.layers.1.cross_attn.k_proj.weight",
        "encoder.sentence_encoder.layers.0.fc1.bias",
        "encoder.sentence_encoder.layernorm_embedding.weight",
    ):
        state = {k: v for k, v in good.items() if k != missing}
        with pytest.raises(NmtInitError, match="missing.*" + missing.replace(".", r"\.")):
            init_nmt_state(state, nmt.state_dict(), [0, 1])
    state = dict(good, **{"encoder.sentence_encoder.layers.0.adapter.weight": torch.zeros(1)})
    with pytest.raises(NmtInitError, match="no place in the model.*adapter"):
        init_nmt_state(state, nmt.state_dict(), [0, 1])
    state = dict(good, **{"encoder.sentence_encoder.layers.2.fc1.weight": torch.zeros(1)})
    with pytest.raises(NmtInitError, match="3 layers but the model's encoder 2"):
        init_nmt_state(state, nmt.state_dict(), [0, 1])
    bigger = build_nmt(toy_dictionary(60), 2)
    with pytest.raises(NmtInitError, match="shape"):
        init_nmt_state(good, bigger.state_dict(), [0, 1])


def test_initializer_is_pure():
    d = toy_dictionary()
    veco = build("veco_tiny", d, seed=1)
    nmt = build_nmt(d, 2)
    src, fresh = veco.state_dict(), nmt.state_dict()
    before = {k: v.clone() for k, v in fresh.items()}
    state, _ = init_nmt_state(src, fresh, [0, 1])
    assert all(torch.equal(before[k], fresh[k]) for k in fresh)
    state["encoder.layers.0.fc1.weight"].add_(1.0)
    assert not torch.equal(
        state["encoder.layers.0.fc1.weight"], src["encoder.sentence_encoder.layers.0.fc1.weight"]
    )


def test_tied_layers_share_modules_and_stay_tied():
    d = toy_dictionary()
    veco = build("veco_tiny", d, seed=1)
    nmt, _ = initialized(veco, d, [1], tied=True)
    untied, _ = initialized(veco, d, [1], tied=False)
    enc, dec = nmt.encoder, nmt.decoder
    for name in ("self_attn", "self_attn_layer_norm", "fc1", "fc2", "final_layer_norm"):
        assert getattr(dec.layers[0], name) is getattr(enc.layers[1], name)
    assert dec.embed_positions is enc.embed_positions
    assert dec.layernorm_embedding is enc.layernorm_embedding
    assert dec.layers[0].encoder_attn is not None
    n_tied = sum(p.numel() for p in nmt.parameters())
    n_untied = sum(p.numel() for p in untied.parameters())
    per_layer = sum(p.numel() for p in veco.sentence_encoder.layers[1].parameters())
    cross = sum(p.numel() for p in veco.sentence_encoder.layers[1].cross_attention_parameters())
    positions = enc.embed_positions.weight.numel() + sum(
        p.numel() for p in enc.layernorm_embedding.parameters()
    )
    assert n_untied - n_tied == per_layer - cross + positions
    # one optimizer step keeps them identical (they are one parameter)
    nmt.train()
    opt = torch.optim.SGD(nmt.parameters(), lr=0.1)
    x = random_tokens(d, 2, 6, seed=1)
    out, _ = nmt(x, x.ne(d.pad()).sum(1), x)
    out.sum().backward()
    opt.step()
    state = nmt.state_dict()
    assert torch.equal(state["decoder.layers.0.fc1.weight"], state["encoder.layers.1.fc1.weight"])


def test_tie_flag_errors():
    d = toy_dictionary()
    with pytest.raises(ValueError, match="lists 1 layers but --decoder-layers is 2"):
        build_nmt(d, 2, tied=[1])
    with pytest.raises(ValueError, match="out of range"):
        build_nmt(d, 1, tied=[5])
    with pytest.raises(ValueError, match="twice"):
        build_nmt(d, 2, tied=[1, 1])


def _roberta(d, seed=2):
    return build(
        "roberta", d, seed=seed, encoder_layers=2, encoder_embed_dim=64,
        encoder_ffn_embed_dim=256, encoder_attention_heads=4,
    ).eval()  # fmt: skip


def test_xlmr_input_starts_cross_attention_random():
    d = toy_dictionary()
    roberta = _roberta(d)
    nmt = build_nmt(d, 2, seed=3)
    fresh = nmt.state_dict()
    state, report = init_nmt_state(roberta.state_dict(), fresh, [0, 1])
    assert report.source_kind == "xlmr"
    cross = ("encoder_attn", "encoder_attn_layer_norm")
    assert report.random_modules == tuple(f"decoder.layers.{j}.{m}" for j in (0, 1) for m in cross)
    assert torch.equal(
        state["decoder.layers.1.encoder_attn.q_proj.weight"],
        fresh["decoder.layers.1.encoder_attn.q_proj.weight"],
    )
    nmt.load_state_dict(state)
    nmt.eval()
    x = random_tokens(d, 3, 7, seed=1, pad_tail=2)
    with torch.no_grad():
        h = roberta.encoder.sentence_encoder(x)["encoder_out"][0]
        enc = nmt.encoder(x, src_lengths=None)["encoder_out"][0]
    assert max_diff(enc, h, x, d.pad()) <= TOL


# --- CLI -----------------------------------------------------------------------------


def _dictionary_files(directory, n_words=50, shuffle=False):
    d = Dictionary()
    words = [f"w{i}" for i in range(n_words)]
    if shuffle:
        words = words[1:] + words[:1]
    for w in words:
        d.add_symbol(w)
    d.save(os.path.join(directory, "dict.txt"))
    d.add_symbol("<mask>")
    return d


def _save(model, args, path):
    torch.save({"model": model.state_dict(), "args": args, "cfg": None}, path)


@pytest.fixture
def veco_checkpoint(tmp_path):
    d = _dictionary_files(tmp_path)
    veco = build("veco_tiny", d, seed=1).eval()
    path = tmp_path / "veco.pt"
    _save(veco, model_args("veco_tiny"), path)
    return veco, d, str(path)


def _cli(*argv):
    return init_nmt.main(init_nmt.get_parser().parse_args(list(argv)))


def _task(directory, dict_path):
    for lang in ("en", "de"):
        os.link(dict_path, os.path.join(directory, f"dict.{lang}.txt"))
    cfg = TranslationFromPretrainedVecoConfig(
        data=str(directory), source_lang="en", target_lang="de", train_subset="train"
    )
    return TranslationFromPretrainedVecoTask.setup_task(cfg)


def test_cli_checkpoint_loads_in_fairseq_and_is_exact(veco_checkpoint, tmp_path):
    veco, d, path = veco_checkpoint
    out = tmp_path / "nmt" / "init.pt"
    _cli("--pretrained", path, "--output", str(out), "--decoder-layers", "last:1")
    data = tmp_path / "data"
    data.mkdir()
    task = _task(data, str(tmp_path / "dict.txt"))
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
    d = _dictionary_files(tmp_path)
    sizes = dict(encoder_layers=3, encoder_embed_dim=32, encoder_ffn_embed_dim=96,
                 encoder_attention_heads=2)  # fmt: skip
    veco = build("veco_tiny", d, seed=5, **sizes).eval()
    _save(veco, model_args("veco_tiny", **sizes), tmp_path / "veco.pt")
    out = tmp_path / "init.pt"
    with caplog.at_level(logging.INFO, logger="veco_plugin.cli.init_nmt"):
        _cli("--pretrained", str(tmp_path / "veco.pt"), "--output", str(out))
    flags = (
        "--arch veco_transformer --encoder-layers 3 --encoder-embed-dim 32 "
        "--encoder-ffn-embed-dim 96 --encoder-attention-heads 2 --decoder-layers 3"
    )
    assert flags in caplog.text
    data = tmp_path / "data"
    data.mkdir()
    models, cfg = checkpoint_utils.load_model_ensemble(
        [str(out)], task=_task(data, str(tmp_path / "dict.txt"))
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
        _cli("--pretrained", str(tmp_path / "veco.pt"), "--output", str(out),
             "--arch", "veco_transformer_tiny")  # fmt: skip
    assert "dropped the pre-training LM head (dense + GELU + LayerNorm + output bias)" in (
        caplog.text
    )


def test_cli_keep_output_bias(veco_checkpoint, tmp_path, caplog):
    veco, _, path = veco_checkpoint
    out = tmp_path / "bias.pt"
    with caplog.at_level(logging.INFO, logger="veco_plugin.cli.init_nmt"):
        ckpt = _cli("--pretrained", path, "--output", str(out), "--keep-output-bias")
    assert "--decoder-layers 2 --decoder-output-bias --max-source-positions 64" in caplog.text
    assert "dense + GELU + LayerNorm: the decoder predicts from the tied embeddings plus" in (
        caplog.text
    )
    assert ckpt["extra_state"]["veco_init_nmt"]["kept_output_bias"]
    data = tmp_path / "data"
    data.mkdir()
    models, cfg = checkpoint_utils.load_model_ensemble(
        [str(out)], task=_task(data, str(tmp_path / "dict.txt"))
    )
    assert cfg.model.decoder_output_bias
    assert torch.equal(models[0].decoder.output_projection.bias, veco.encoder.lm_head.bias)


def test_cli_logs_random_cross_attention_for_roberta(tmp_path, caplog):
    d = _dictionary_files(tmp_path)
    roberta = _roberta(d)
    args = model_args("roberta", encoder_layers=2, encoder_embed_dim=64,
                      encoder_ffn_embed_dim=256, encoder_attention_heads=4)  # fmt: skip
    # the old fairseq XLM-R layout: decoder.sentence_encoder.*, emb_layer_norm
    state = {
        k.replace("encoder.", "decoder.", 1).replace("layernorm_embedding", "emb_layer_norm"): v
        for k, v in roberta.state_dict().items()
    }
    torch.save({"model": state, "args": args, "cfg": None}, tmp_path / "model.pt")
    with caplog.at_level(logging.INFO, logger="veco_plugin.cli.init_nmt"):
        out = _cli("--pretrained", str(tmp_path / "model.pt"), "--output", str(tmp_path / "i.pt"))
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
    ckpt = _cli("--pretrained", path, "--output", str(out), "--decoder-layers", "1", "--tie-layers")
    assert ckpt["cfg"]["model"].tie_decoder_to_encoder_layers == "1"
    data = tmp_path / "data"
    data.mkdir()
    models, _ = checkpoint_utils.load_model_ensemble(
        [str(out)], task=_task(data, str(tmp_path / "dict.txt"))
    )
    assert models[0].decoder.layers[0].fc1 is models[0].encoder.layers[1].fc1


def test_cli_bad_input_one_line_errors(veco_checkpoint, tmp_path):
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
            _cli("--pretrained", path, "--output", out, *extra)
    other = tmp_path / "other"
    other.mkdir()
    _dictionary_files(other, n_words=40)
    with pytest.raises(NmtInitError, match="45 types with <mask> but the checkpoint's embeddings"):
        _cli("--pretrained", path, "--output", out, "--dict", str(other / "dict.txt"))
    torch.save({"model": {"decoder.embed_tokens.weight": torch.zeros(3, 2)}}, tmp_path / "t.pt")
    with pytest.raises(NmtInitError, match="not a veco/XLM-R/RoBERTa checkpoint"):
        _cli("--pretrained", str(tmp_path / "t.pt"), "--output", out)
    assert not os.path.exists(out)
    with pytest.raises(SystemExit, match="^veco-init-nmt: error: .*out of range"):
        init_nmt.cli_main(["--pretrained", path, "--output", out, "--decoder-layers", "9"])


def test_mismatched_data_dictionary_is_refused(veco_checkpoint, tmp_path):
    _, d, path = veco_checkpoint
    out = tmp_path / "init.pt"
    _cli("--pretrained", path, "--output", str(out))
    shuffled = tmp_path / "shuffled"
    shuffled.mkdir()
    _dictionary_files(shuffled, shuffle=True)  # same size, other order
    task = _task(shuffled, str(shuffled / "dict.txt"))
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
    _dictionary_files(smaller, n_words=30)
    task = _task(smaller, str(smaller / "dict.txt"))
    with pytest.raises(ValueError, match="55 rows but the data dictionary.*35 types.*reduce-vocab"):
        checkpoint_utils.load_model_ensemble([str(out)], task=task)


# --- task ----------------------------------------------------------------------------


def test_task_requires_a_joined_dictionary(tmp_path):
    _dictionary_files(tmp_path)
    os.link(tmp_path / "dict.txt", tmp_path / "dict.en.txt")
    other = tmp_path / "o"
    other.mkdir()
    _dictionary_files(other, shuffle=True)
    os.link(other / "dict.txt", tmp_path / "dict.de.txt")
    cfg = TranslationFromPretrainedVecoConfig(
        data=str(tmp_path), source_lang="en", target_lang="de"
    )
    with pytest.raises(ValueError, match="differ.*--joined-dictionary --srcdict"):
        TranslationFromPretrainedVecoTask.setup_task(cfg)


def test_inference_iterators_keep_every_sentence(tmp_path):
    d = _dictionary_files(tmp_path)
    data = tmp_path / "data"
    data.mkdir()
    task = _task(data, str(tmp_path / "dict.txt"))
    sents = [random_tokens(d, 1, 4 + i % 3, seed=i)[0, 1:] for i in range(13)]
    sizes = [len(s) for s in sents]

    def dataset():
        return LanguagePairDataset(sents, sizes, d, sents, sizes, d)

    def count(ds):
        itr = task.get_batch_iterator(
            dataset=ds, max_tokens=4096, required_batch_size_multiple=8
        ).next_epoch_itr(shuffle=False)
        return sum(batch["nsentences"] for batch in itr)

    test = dataset()
    task.datasets["test"] = test
    assert count(test) == 13
    train = dataset()
    task.datasets[task.cfg.train_subset] = train
    assert count(train) == 8  # fairseq's rounding, kept for training only
    assert task.cfg.max_source_positions == task.cfg.max_target_positions == 512


# --- architectures -------------------------------------------------------------------


def test_archs_match_veco_sizes_and_pretraining_conventions():
    from fairseq.models import ARCH_CONFIG_REGISTRY

    for size in ("tiny", "small", "base", "large"):
        nmt, veco = Namespace(), Namespace()
        ARCH_CONFIG_REGISTRY[f"veco_transformer_{size}"](nmt)
        ARCH_CONFIG_REGISTRY[f"veco_{size}"](veco)
        for key in ("layers", "embed_dim", "ffn_embed_dim", "attention_heads"):
            assert getattr(nmt, f"encoder_{key}") == getattr(veco, f"encoder_{key}"), (size, key)
            assert getattr(nmt, f"decoder_{key}") == getattr(veco, f"encoder_{key}"), (size, key)
        assert nmt.share_all_embeddings and nmt.layernorm_embedding and nmt.no_scale_embedding
        assert nmt.encoder_learned_pos and nmt.decoder_learned_pos
        assert not nmt.encoder_normalize_before and not nmt.decoder_normalize_before
        assert nmt.activation_fn == "gelu"
        assert nmt.max_source_positions == nmt.max_target_positions == 512
    model = build_nmt(toy_dictionary(), 2)
    assert model.encoder.embed_scale == model.decoder.embed_scale == 1.0
    assert model.encoder.layer_norm is None and model.decoder.layer_norm is None  # post-LN
    assert model.encoder.embed_positions.weight.shape[0] == 64 + 2  # fairseq padding offset


def test_arch_functions_keep_what_the_user_passed():
    from fairseq.models import ARCH_CONFIG_REGISTRY

    args = Namespace(encoder_layers=3, decoder_layers=1, dropout=0.3, max_source_positions=256)
    ARCH_CONFIG_REGISTRY["veco_transformer_large"](args)
    assert (args.encoder_layers, args.decoder_layers, args.dropout) == (3, 1, 0.3)
    assert args.max_source_positions == 256 and args.encoder_embed_dim == 1024
    args = Namespace()
    ARCH_CONFIG_REGISTRY["veco_transformer_large"](args)
    assert args.decoder_layers == 24  # the paper's full decoder by default
