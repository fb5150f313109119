"""The word aligner (veco-align): piece bookkeeping, batching, method dispatch, errors."""

import argparse
import logging
import random
import shutil

import pytest
import torch

from tests.helpers.runner import REPO
from tests.helpers.toy import build, random_tokens, toy_dictionary
from veco_plugin.alignment.aligner import (
    METHODS,
    MIN_LENGTH_SHARE,
    _batches,
    align_pairs,
    collate,
    encode_pairs,
    encode_sentence,
    fit_pair,
    links_from_hidden,
    word_pieces,
)
from veco_plugin.checkpoints.encoder import (
    find_dictionary,
    find_spm_model,
    load_encoder,
    locate_spm_model,
)
from veco_plugin.cli.align import cli_main
from veco_plugin.errors import VecoUserError
from veco_plugin.models.features import layer_states, resolve_layer
from veco_plugin.models.layer_spec import default_layer
from veco_plugin.modules.pair_layout import word_positions


def pieces(word):
    """Toy subwords: ``w1+w2`` is one word of two pieces."""
    return word.split("+")


def random_line(rng, n_words, vocab=45):
    return " ".join(
        "+".join(f"w{rng.randrange(vocab)}" for _ in range(rng.choice((1, 1, 2, 3))))
        for _ in range(n_words)
    )


@pytest.fixture(scope="module")
def toy():
    d = toy_dictionary()
    return build("veco_tiny", d, seed=4).eval(), d


def test_each_piece_knows_its_word():
    d = toy_dictionary()
    s = encode_sentence("w1 w2+w3+w4 w5", pieces, d)
    assert s.ids == [d.index(w) for w in ("w1", "w2", "w3", "w4", "w5")]
    assert s.words == [0, 1, 1, 1, 2] and s.n_words == 3
    assert d.unk() not in s.ids
    empty = encode_sentence("  ", pieces, d)
    assert (empty.ids, empty.words, empty.n_words) == ([], [], 0)


def test_collate_lays_out_pairs_as_in_training():
    d = toy_dictionary()
    x = encode_sentence("w1 w2+w3", pieces, d)
    y = encode_sentence("w4", pieces, d)
    batch = collate([(x, y), (y, x)], d)
    bos, eos, pad = d.bos(), d.eos(), d.pad()
    w = [d.index(f"w{i}") for i in range(5)]
    assert batch.tokens.tolist() == [
        [bos, w[1], w[2], w[3], eos, bos, w[4], eos],
        [bos, w[4], eos, bos, w[1], w[2], w[3], eos],
    ]
    assert batch.first_lengths.tolist() == [5, 3]
    assert batch.src_words.tolist() == [[-1, 0, 1, 1, -1], [-1, 0, -1, -1, -1]]
    assert batch.tgt_words.tolist() == [[-1, 0, -1, -1, -1], [-1, 0, 1, 1, -1]]
    assert (batch.n_src_words, batch.n_tgt_words) == (2, 2)
    # the same pieces the pointer network and dwa's self-labelling see
    x_real, y_real = word_positions(batch.tokens, batch.first_lengths, batch.width, pad, bos, eos)
    assert torch.equal(x_real, batch.src_words.ge(0))
    assert torch.equal(y_real, batch.tgt_words.ge(0))


@pytest.mark.parametrize("n_src,n_tgt,budget", [(3, 4, 10), (30, 10, 20), (1, 99, 50), (7, 7, 7)])
def test_fit_pair_cuts_in_proportion(n_src, n_tgt, budget):
    keep_src, keep_tgt = fit_pair(n_src, n_tgt, budget)
    assert keep_src <= n_src and keep_tgt <= n_tgt
    if n_src + n_tgt <= budget:
        assert (keep_src, keep_tgt) == (n_src, n_tgt)
    else:
        assert keep_src + keep_tgt == budget
        assert abs(keep_src - budget * n_src / (n_src + n_tgt)) < 1


def _planted(src, tgt, match):
    """Hidden states of one pair whose source piece i is close to target piece match[i]."""
    d = toy_dictionary()
    batch = collate([(encode_sentence(src, pieces, d), encode_sentence(tgt, pieces, d))], d)
    hidden = torch.zeros(*batch.tokens.shape, 16)
    first = int(batch.first_lengths[0])
    for i, js in match.items():
        hidden[0, 1 + i, i] = 3.0
        for j, score in js:
            hidden[0, first + 1 + j, i] = score
    return hidden, batch


def test_methods_on_planted_hidden_states():
    # source "A B+C D" (pieces 0, 1, 2, 3), target "a b c" (pieces 0, 1, 2): A ~ a, both
    # pieces of B+C ~ b, D weakly ~ a, c ~ nothing. Each method reads it differently.
    hidden, batch = _planted(
        "w1 w2+w3 w4", "w5 w6 w7", {0: [(0, 2.0)], 1: [(1, 2.0)], 2: [(1, 1.0)], 3: [(0, 0.5)]}
    )
    got = {m: links_to_set(links_from_hidden(hidden, batch, m)[0]) for m in METHODS}
    # argmax: only mutual best pieces; a prefers A over D, c prefers no one
    assert got["argmax"] == {(0, 0), (1, 1)}
    # itermax: a second round adds D-a (D is unaligned, a already is: discounted by alpha)
    assert got["itermax"] == {(0, 0), (1, 1), (2, 0)}
    # ot: every target piece ships a unit of mass (Sinkhorn), so c's goes to the source
    # piece with the least else to do, D, whose own row then prefers c to the taken a
    assert got["ot"] == {(0, 0), (1, 1), (2, 2)}
    with pytest.raises(ValueError, match="unknown alignment method"):
        links_from_hidden(hidden, batch, "viterbi")


def links_to_set(links):
    return {tuple(p) for p in links.nonzero().tolist()}


def test_batching_restores_order_and_is_padding_invariant(toy, monkeypatch):
    model, d = toy
    rng = random.Random(0)
    src = [random_line(rng, rng.randint(1, 9)) for _ in range(11)]
    tgt = [random_line(rng, rng.randint(1, 9)) for _ in range(11)]
    src[4], tgt[7] = "", "   "  # empty sentences: an empty line, not a model call
    # the batchings pad differently, so their states differ by fp32 rounding (~1e-7): the
    # links are compared exactly because none of these is near a tie, which the end checks
    # (states shaken by a relative 1e-4, 1000x that, give the same links)
    links = {}
    for method in METHODS:
        one = [align_pairs(model, d, pieces, [s], [t], method=method)[0] for s, t in zip(src, tgt)]
        batched = align_pairs(model, d, pieces, src, tgt, method=method, batch_size=4)
        by_tokens = align_pairs(model, d, pieces, src, tgt, method=method, max_tokens=60)
        assert batched == one == by_tokens, method
        links[method] = one
        assert one[4] == one[7] == ""
        assert sum(bool(line) for line in one) == 9, method
        for line, s, t in zip(one, src, tgt):
            for link in line.split():
                i, j = map(int, link.split("-"))
                assert 0 <= i < len(s.split()) and 0 <= j < len(t.split())
    g = torch.Generator().manual_seed(0)

    def shaken(*args):
        h = layer_states(*args)
        return h * (1 + 1e-4 * torch.randn(h.shape, generator=g))

    monkeypatch.setattr("veco_plugin.alignment.aligner.layer_states", shaken)
    for method in METHODS:
        assert align_pairs(model, d, pieces, src, tgt, method=method) == links[method], method


def test_batches_pad_no_pair_by_more_than_its_share():
    rng = random.Random(0)
    lengths = [rng.choice([rng.randint(8, 40), rng.randint(40, 120)]) for _ in range(200)]
    order = sorted(range(200), key=lambda i: -lengths[i])
    batches = list(_batches(order, lengths, 32, None))
    assert [i for batch in batches for i in batch] == order
    for batch in batches:
        assert len(batch) <= 32
        assert all(lengths[i] >= MIN_LENGTH_SHARE * lengths[batch[0]] for i in batch)
    padded = sum(len(batch) * lengths[batch[0]] for batch in batches)
    assert padded <= sum(lengths) / MIN_LENGTH_SHARE


def test_long_pairs_are_truncated_with_a_warning(toy, caplog):
    model, d = toy  # 64 positions: 60 pieces per pair
    src, tgt = " ".join(["w1+w2"] * 40), " ".join(["w3"] * 40)  # 80 + 40 pieces
    pairs, truncated = encode_pairs([src, "w1"], [tgt, "w2"], pieces, d, 64)
    assert truncated == 1
    assert (len(pairs[0][0].ids), len(pairs[0][1].ids)) == (40, 20)
    assert (pairs[0][0].n_words, pairs[0][1].n_words) == (40, 40)
    with caplog.at_level(logging.WARNING):
        line = align_pairs(model, d, pieces, [src, "w1"], [tgt, "w2"])[0]
    assert "1 of 2 pairs exceed the model's 64 positions" in caplog.text
    links = [tuple(map(int, link.split("-"))) for link in line.split()]
    assert links and all(i < 20 and j < 20 for i, j in links)


def test_layers():
    assert [default_layer("align", n) for n in (1, 2, 6, 12, 24)] == [1, 1, 4, 8, 16]
    d = toy_dictionary()
    model = build("veco_tiny", d)  # 2 layers
    assert resolve_layer(model, None, "align") == 1 and resolve_layer(model, 0, "align") == 0
    with pytest.raises(VecoUserError, match="--layer 3: the model has layers 0..2"):
        resolve_layer(model, 3, "align")


def test_user_errors_name_the_flag(tmp_path):
    text = tmp_path / "not-a-checkpoint.pt"
    text.write_text("hello\n")
    with pytest.raises(VecoUserError, match="--path .*missing.pt: no such file"):
        load_encoder(str(tmp_path / "missing.pt"))
    with pytest.raises(VecoUserError, match="is a directory"):
        load_encoder(str(tmp_path))
    with pytest.raises(VecoUserError, match=f"--path {text}: not a .*checkpoint"):
        load_encoder(str(text))
    with pytest.raises(VecoUserError, match=f"--path {text}: not a .*checkpoint"):
        word_pieces(checkpoint=str(text))  # read for its training data: no spm beside it
    moved = tmp_path / "moved.pt"  # the frozen checkpoint: its training data is not here
    shutil.copy(f"{REPO}/tests/fixtures/checkpoints/veco_tiny/checkpoint.pt", moved)
    with pytest.raises(VecoUserError, match="--spm-model MODEL .* or --bpe-codes"):
        word_pieces(checkpoint=str(moved))
    with pytest.raises(VecoUserError, match="--spm-model .*: no such file"):
        word_pieces(spm_model=str(tmp_path / "spm.model"))


def _checkpoint_and_data(tmp_path):
    """(a checkpoint's folder, its training data folder, the checkpoint's path)."""
    (tmp_path / "ckpt").mkdir()
    (tmp_path / "data").mkdir()
    return tmp_path / "ckpt", tmp_path / "data", str(tmp_path / "ckpt" / "model.pt")


def test_the_spm_model_is_found_next_to_the_checkpoint_then_in_its_data(tmp_path):
    """The rule of find_dictionary, for the sentencepiece model of every tool."""
    ckpt_dir, data, ckpt = _checkpoint_and_data(tmp_path)
    state = {"cfg": {"task": {"_name": "veco_pretraining", "data": f"{data}:{tmp_path}/b"}}}
    assert locate_spm_model(ckpt, state) == (None, f"next to it nor in its training data {data}")
    assert locate_spm_model(ckpt, {"cfg": {"task": {}}}) == (None, "next to it")
    with pytest.raises(VecoUserError, match=f"--path {ckpt}: no .* nor in its training data"):
        find_spm_model(None, ckpt, state)
    (data / "spm.model").write_text("x")
    assert find_spm_model(None, ckpt, state) == str(data / "spm.model")
    (ckpt_dir / "sentencepiece.bpe.model").write_text("x")
    assert locate_spm_model(ckpt)[0] == str(ckpt_dir / "sentencepiece.bpe.model")  # not read
    assert find_spm_model(str(data / "spm.model"), ckpt, state) == str(data / "spm.model")


def test_the_dictionary_is_found_next_to_the_checkpoint_then_in_its_data(tmp_path):
    ckpt_dir, data, ckpt = _checkpoint_and_data(tmp_path)
    state = {"cfg": {"task": {"_name": "masked_lm", "data": f"{data}:{tmp_path}/other"}}}
    with pytest.raises(VecoUserError, match="no dictionary found .* as --dict"):
        find_dictionary(ckpt, state)
    (data / "dict.txt").write_text("a 1\n")
    assert find_dictionary(ckpt, state) == str(data / "dict.txt")
    assert find_dictionary(ckpt, {"args": argparse.Namespace(data=str(data))}) == str(
        data / "dict.txt"
    )
    (ckpt_dir / "dict.txt").write_text("a 1\n")
    assert find_dictionary(ckpt, state) == str(ckpt_dir / "dict.txt")
    assert find_dictionary(ckpt, state, str(data / "dict.txt")) == str(data / "dict.txt")
    with pytest.raises(VecoUserError, match="--dict .*vocab.txt: no such file"):
        find_dictionary(ckpt, state, str(data / "vocab.txt"))


def test_bpe_codes_without_fastbpe_says_how_to_install(tmp_path):
    pytest.importorskip("fairseq")
    try:
        import fastBPE  # noqa: F401

        pytest.skip("fastBPE is installed")
    except ImportError:
        pass
    codes = tmp_path / "codes"
    codes.write_text("e r 10\n")
    with pytest.raises(VecoUserError, match="scripts/install-fastbpe.sh"):
        word_pieces(bpe_codes=str(codes))


def _cli_error(argv, capsys) -> str:
    with pytest.raises(SystemExit) as exc:
        cli_main(argv)
    message = exc.value.code if isinstance(exc.value.code, str) else capsys.readouterr().err
    return message.strip().splitlines()[-1]


def test_cli_errors_are_one_line(tmp_path, capsys):
    src, tgt = tmp_path / "src", tmp_path / "tgt"
    src.write_text("a b\nc\n")
    tgt.write_text("x\n")
    line = _cli_error(["--src", str(src), "--tgt", str(tgt)], capsys)
    assert line == "veco-align: error: the following arguments are required: --path"
    args = ["--path", str(tmp_path), "--spm-model", "m", "--src", str(src), "--tgt", str(tgt)]
    line = _cli_error(args, capsys)
    assert line.startswith("veco-align: error: --src") and "2 lines" in line and "1" in line
    tgt.write_text("x\ny\n")
    line = _cli_error(args, capsys)
    assert line.startswith(f"veco-align: error: --path {tmp_path} is a directory"), line
    args[1] = __file__  # exists: the next check is the subword model
    line = _cli_error(args, capsys)
    assert line.startswith("veco-align: error: --spm-model m: no such file"), line
    args[3] = __file__  # exists, but is no sentencepiece model
    line = _cli_error(args, capsys)
    assert line.startswith("veco-align: error: --spm-model"), line


@pytest.mark.parametrize(
    "arch,sizes",
    [
        ("veco_tiny", {}),
        # fairseq's own RoBERTa encoder: the tools read released XLM-R checkpoints through
        # the same layer loop as veco's
        (
            "roberta_base",
            dict(encoder_embed_dim=64, encoder_ffn_embed_dim=128, encoder_attention_heads=4),
        ),
        # pre-norm: the last layer's state is read before the encoder's final LayerNorm
        (
            "roberta_base",
            dict(
                encoder_embed_dim=64,
                encoder_ffn_embed_dim=128,
                encoder_attention_heads=4,
                encoder_normalize_before=True,
            ),
        ),
    ],
)
def test_layer_states_stop_early_and_equal_robertas_inner_states(arch, sizes):
    d = toy_dictionary()
    model = build(arch, d, seed=3, encoder_layers=3, **sizes).eval()
    tokens = random_tokens(d, 4, 9, seed=2, pad_tail=3)
    with torch.no_grad():
        _, extra = model(tokens, features_only=True, return_all_hiddens=True)
        for layer in range(4):
            torch.testing.assert_close(
                layer_states(model, tokens, layer), extra["inner_states"][layer].transpose(0, 1)
            )
