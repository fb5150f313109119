"""The veco model: shapes, plug-out == fairseq roberta, plug-in == eqs. (6)-(9)."""

import torch

from tests.helpers.toy import build, random_tokens, stream_logits, toy_dictionary
from veco_plugin.models.requests import Embed, PlugOut, TwoStream


def test_shapes_and_layout():
    d = toy_dictionary()
    model = build("veco_tiny", d).eval()
    tokens = random_tokens(d, 4, 9)
    logits, _ = model(tokens)
    assert logits.shape == (4, 9, len(d))
    out = model(
        requests={
            "pairs": TwoStream(tokens, tokens.ne(d.pad())),
            "concat": PlugOut(tokens, layers=(0, 1, 2)),
            "rows": Embed(tokens[0]),
        }
    )
    assert out["pairs"].h_logits.shape == out["pairs"].s_logits.shape == (36, len(d))
    assert [h.shape for h in out["concat"].hidden.values()] == [(4, 9, 64)] * 3
    assert out["concat"].logits is None
    assert out["rows"].embeddings.shape == (9, 64)
    keys = model.state_dict().keys()
    assert "encoder.sentence_encoder.layers.1.cross_attn.k_proj.weight" in keys
    assert "encoder.sentence_encoder.layers.1.cross_attn_layer_norm.weight" in keys
    assert "encoder.sentence_encoder.layernorm_embedding.weight" in keys
    # RoBERTa LM head is tied to the input embeddings
    assert model.encoder.lm_head.weight is model.encoder.sentence_encoder.embed_tokens.weight


def test_plug_out_equals_fairseq_roberta():
    d = toy_dictionary()
    veco = build("veco_tiny", d, seed=1).eval()
    roberta = build(
        "roberta",
        d,
        seed=2,
        encoder_layers=2,
        encoder_embed_dim=64,
        encoder_ffn_embed_dim=256,
        encoder_attention_heads=4,
    ).eval()
    state = {k: v for k, v in veco.state_dict().items() if ".cross_attn" not in k}
    roberta.load_state_dict(state, strict=True)
    tokens = random_tokens(d, 3, 11, pad_tail=4)
    with torch.no_grad():
        a, _ = veco(tokens)
        b, _ = roberta(tokens)
    torch.testing.assert_close(a, b, rtol=1e-6, atol=1e-6)


def _reference_s_stream(model, x, y_memory, y_pad):
    """Eqs. (6)-(9) written out with the layer's own modules (post-LN)."""
    enc = model.encoder.sentence_encoder
    pad = x.eq(enc.padding_idx)
    s, _ = enc.forward_embedding(x)
    s = (s * (~pad).unsqueeze(-1)).transpose(0, 1)
    for layer in enc.layers:
        a, _ = layer.self_attn(s, s, s, key_padding_mask=pad)
        s = layer.self_attn_layer_norm(s + a)
        c, _ = layer.cross_attn(s, y_memory, y_memory, key_padding_mask=y_pad, static_kv=True)
        s = layer.cross_attn_layer_norm(s + c)
        f = layer.fc2(layer.activation_fn(layer.fc1(s)))
        s = layer.final_layer_norm(s + f)
    return s


def test_plug_in_is_eqs_6_to_9_with_last_layer_of_paired_sequence():
    d = toy_dictionary()
    model = build("veco_tiny", d, seed=3).eval()
    pair = random_tokens(d, 4, 10, seed=5, pad_tail=3)  # rows 0,1 = x; rows 2,3 = y
    enc = model.encoder.sentence_encoder
    with torch.no_grad():
        h = enc(pair)["encoder_out"][0]  # (T, 4, C)
        _, s_logits = stream_logits(model, pair)
        pad = pair.eq(d.pad())
        # x rows attend to H^L of y rows and vice versa
        s_x = _reference_s_stream(model, pair[:2], h[:, 2:], pad[2:])
        s_y = _reference_s_stream(model, pair[2:], h[:, :2], pad[:2])
        ref = model.encoder.output_layer(torch.cat([s_x, s_y], 1).transpose(0, 1))  # (4, T, V)
    torch.testing.assert_close(s_logits, ref, rtol=1e-5, atol=1e-5)


def test_plug_in_depends_on_the_paired_sequence_only_through_cross_attention():
    d = toy_dictionary()
    model = build("veco_tiny", d, seed=4).eval()
    pair = random_tokens(d, 2, 8, seed=1)
    other = pair.clone()
    other[1, 2:6] = torch.randint(d.nspecial, len(d) - 1, (4,))
    with torch.no_grad():
        h1, s1 = stream_logits(model, pair)
        h2, s2 = stream_logits(model, other)
    # (2B, T, V) logits; H of x (row 0) ignores y, S of x (row 0) sees the changed y
    torch.testing.assert_close(h1[0], h2[0])
    assert not torch.allclose(s1[0], s2[0])


def test_plug_out_request_equals_roberta_forward_and_keeps_layers():
    d = toy_dictionary()
    model = build("veco_tiny", d, seed=6).eval()
    tokens = random_tokens(d, 3, 10, pad_tail=2)
    masked = tokens.ne(d.pad())
    with torch.no_grad():
        logits, extra = model(tokens, return_all_hiddens=True)
        out = model(requests={"x": PlugOut(tokens, masked, layers=(1, 2))})["x"]
    # the LM head runs on the masked rows only there, on every row here: other matmul
    # shapes, so equal within fp32 rounding, not bit for bit
    torch.testing.assert_close(out.logits, logits[masked], rtol=1e-5, atol=1e-5)
    # the same encoder calls on the same tokens: exact
    for layer in (1, 2):  # fairseq's inner_states[l] is (T, B, C)
        torch.testing.assert_close(
            out.hidden[layer], extra["inner_states"][layer].transpose(0, 1), rtol=0, atol=0
        )
