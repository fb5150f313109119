"""veco -> veco_transformer key map (``veco_plugin.nmt_init.keymap``): exactness, the
explicit map, layer specs, missing/unexpected keys, purity, XLM-R input.

Exactness (paper §3.2, Figure 3): after initialization the encoder reproduces the
pre-trained H stream and the decoder, run with full context (no future mask), the S
stream of y conditioned on x, both on padded batches with dropout 0.
"""

import pytest
import torch

from tests.helpers.nmt import TOL, build_nmt, initialized, max_diff, streams, tiny_roberta
from tests.helpers.toy import build, random_tokens, stream_logits, toy_dictionary
from veco_plugin.nmt_init import NmtInitError, init_nmt_state, nmt_module_map, parse_decoder_layers
from veco_plugin.nmt_init.keymap import TARGET_BUFFERS


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
        ("24,", "out of range"),
        ("0", "ambiguous: for N decoder layers write last:N"),
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


def test_xlmr_input_starts_cross_attention_random():
    d = toy_dictionary()
    roberta = tiny_roberta(d)
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


@pytest.mark.parametrize("extension", ["pointer", "exchange"])
def test_objective_extensions_are_dropped(extension):
    """A dwa (pointer network) or weam (exchange head) checkpoint initializes the NMT
    model exactly as one without the extension."""
    d = toy_dictionary()
    veco = build("veco_tiny", d, seed=1)
    plain, _ = init_nmt_state(veco.state_dict(), build_nmt(d, 2).state_dict(), [0, 1])
    veco.build_extension(extension)
    extended, _ = init_nmt_state(veco.state_dict(), build_nmt(d, 2).state_dict(), [0, 1])
    assert plain.keys() == extended.keys()
    assert all(torch.equal(plain[k], extended[k]) for k in plain)
