"""veco_plugin.export: the fairseq -> transformers key table and the id-aligned sentencepiece
model, on toy veco models and a real sentencepiece model trained on the fixture text."""

import pytest
import torch

from tests.helpers.runner import REPO
from tests.helpers.toy import build, random_tokens, toy_dictionary
from veco_plugin.corpora import subwords
from veco_plugin.errors import VecoUserError
from veco_plugin.export.keymap import count_layers, key_table, to_transformers
from veco_plugin.export.tokenizer import aligned_model, fast_tokenizer, unigram_vocab
from veco_plugin.modules.pointer_network import VecoPointerNetwork

TEXT = f"{REPO}/tests/fixtures/text"


# --- key map ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def veco():
    return build("veco_tiny", toy_dictionary(), seed=3).eval()


def _with_pointer(model):
    """The state of a ``dwa`` checkpoint: the model's plus ``pointer.*``."""
    pointer = VecoPointerNetwork(model.args.encoder_embed_dim).state_dict()
    return {**model.state_dict(), **{f"pointer.{k}": v for k, v in pointer.items()}}


def test_every_encoder_tensor_mapped_cross_attention_and_pointer_dropped(veco):
    state = _with_pointer(veco)
    out, report = to_transformers(state)
    assert report.layers == count_layers(list(state)) == 2
    assert (
        report.mapped == len(key_table(2)) == 3 + 3 * 2 + 2 * 16
    )  # tensors, weight+bias modules, layers
    cross = sum(".cross_attn" in k for k in state)
    pointer = sum(k.startswith("pointer.") for k in state)
    assert cross == 20 and pointer > 0
    assert report.dropped["cross-attention"] == cross
    assert report.dropped["dwa's pointer network"] == pointer
    emb = state["encoder.sentence_encoder.embed_tokens.weight"]
    assert torch.equal(out["lm_head.decoder.weight"], emb)
    assert torch.equal(
        out["roberta.encoder.layer.1.attention.self.key.bias"],
        state["encoder.sentence_encoder.layers.1.self_attn.k_proj.bias"],
    )
    assert not out["roberta.embeddings.token_type_embeddings.weight"].any()


def test_unexpected_missing_and_untied_keys_fail(veco):
    state = dict(_with_pointer(veco))
    with pytest.raises(VecoUserError, match=r"1 tensors have no place .*encoder\.extra\.weight"):
        to_transformers({**state, "encoder.extra.weight": torch.zeros(1)})
    fc1 = "encoder.sentence_encoder.layers.1.fc1.bias"
    with pytest.raises(VecoUserError, match=r"1 encoder tensors are missing \(e.g. " + fc1):
        to_transformers({k: v for k, v in state.items() if k != fc1})
    untied = {**state, "encoder.lm_head.weight": state["encoder.lm_head.weight"] + 1}
    with pytest.raises(VecoUserError, match="an untied LM head cannot be exported"):
        to_transformers(untied)


def test_the_transformers_model_equals_the_plug_out_forward(veco):
    """Exact equality, every layer and the logits, with padding (toy model, random weights)."""
    transformers = pytest.importorskip("transformers")
    from veco_plugin.export.hf import encoder_shape, xlmr_config

    model, d = veco, veco.encoder.dictionary
    config = xlmr_config(encoder_shape(model), d)
    hf = transformers.XLMRobertaForMaskedLM(transformers.XLMRobertaConfig(**config)).eval()
    hf.load_state_dict(to_transformers(_with_pointer(model))[0], strict=True)
    tokens = random_tokens(d, 4, 20, seed=1, pad_tail=5)
    real = tokens.ne(d.pad())
    with torch.no_grad():
        logits, extra = model(tokens, return_all_hiddens=True)
        out = hf(input_ids=tokens, attention_mask=real.long(), output_hidden_states=True)
    for ours, theirs in zip(extra["inner_states"], out.hidden_states):
        torch.testing.assert_close(ours.transpose(0, 1)[real], theirs[real], atol=1e-5, rtol=0)
    torch.testing.assert_close(logits[real], out.logits[real], atol=1e-5, rtol=0)


def test_a_pre_ln_encoder_is_refused():
    from veco_plugin.export.hf import encoder_shape

    model = build("veco_tiny", toy_dictionary(), encoder_normalize_before=True)
    with pytest.raises(VecoUserError, match="pre-LN"):
        encoder_shape(model)


# --- tokenizer --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def spm_model(tmp_path_factory):
    """The pipeline's sentencepiece model (no <s>/</s> pieces) and its dict.txt symbols."""
    root = tmp_path_factory.mktemp("spm")
    inputs = [f"{TEXT}/train.en", f"{TEXT}/train.de"]
    model = subwords.train_sentencepiece(inputs, str(root / "spm"), 300)
    subwords.write_dictionary(model, str(root / "dict.txt"))
    from fairseq.data import Dictionary

    d = Dictionary.load(str(root / "dict.txt"))
    d.add_symbol("<mask>")
    return model, d


def _processor(proto: bytes):
    import sentencepiece as spm

    return spm.SentencePieceProcessor(model_proto=proto)


def _lines():
    with open(f"{TEXT}/valid.de", encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f] + ["Zurück (Alt+←) %s 12,5"]


def test_aligned_pieces_are_fairseq_ids_minus_one(spm_model):
    model, d = spm_model
    original = open(model, "rb").read()
    proto, counts = aligned_model(original, d.symbols)
    assert counts == {"pieces": len(d) - 2, "unused": 0}
    sp, old = _processor(proto), _processor(original)
    assert [sp.id_to_piece(i) for i in range(3)] == ["<unk>", "<s>", "</s>"]
    for i, symbol in enumerate(d.symbols[4:-1], start=4):
        assert sp.piece_to_id(symbol) == i - 1
    for line in _lines():  # same segmentation, ids shifted as transformers expects
        pieces = old.encode(line, out_type=str)
        assert sp.encode(line, out_type=str) == pieces
        assert [i + 1 if i else 3 for i in sp.encode(line)] == [d.index(p) for p in pieces]


def _reordered(d, padding="madeupword0000"):
    """``d``'s pieces in another order, plus one padding symbol (fairseq's, or one spelled in
    the model's pieces)."""
    from fairseq.data import Dictionary

    shuffled = Dictionary()
    words = d.symbols[4:-1]
    for w in words[1::2] + words[0::2] + [padding]:
        shuffled.add_symbol(w)
    shuffled.add_symbol("<mask>")
    return shuffled


def test_a_dictionary_in_another_order_and_with_padding_symbols(spm_model):
    model, d = spm_model
    shuffled = _reordered(d)
    proto, counts = aligned_model(open(model, "rb").read(), shuffled.symbols)
    assert counts["unused"] == 1
    sp = _processor(proto)
    for line in _lines():
        pieces = sp.encode(line, out_type=str)
        assert [i + 1 if i else 3 for i in sp.encode(line)] == [shuffled.index(p) for p in pieces]
    assert "madeupword0000" not in sp.encode("madeupword0000", out_type=str)


def test_dictionaries_that_cannot_be_expressed(spm_model):
    from fairseq.data import Dictionary

    model, d = spm_model
    original = open(model, "rb").read()
    with pytest.raises(VecoUserError, match="last symbol is 's', not <mask>"):
        aligned_model(original, d.symbols[:-1] + ["s"])
    short = Dictionary()
    for w in d.symbols[5:-1]:
        short.add_symbol(w)
    short.add_symbol("<mask>")
    with pytest.raises(VecoUserError, match=r"1 sentencepiece pieces are not in the dictionary"):
        aligned_model(original, short.symbols)
    with pytest.raises(VecoUserError, match="not a sentencepiece model"):
        aligned_model(b"\x00not a model", d.symbols)


@pytest.mark.parametrize("order", ["dict.txt", "reordered"])
def test_tokenizer_json_gives_fairseq_ids(spm_model, order):
    """``tokenizer.json``, which transformers 4.x's fast and 5.x's only XLM-R tokenizer read,
    through the ``tokenizers`` library: its vocabulary is the dictionary in order and it
    encodes real lines to fairseq's ids between <s> and </s>, never to a padding symbol
    (which has no piece type there, only a score below its spelling's)."""
    pytest.importorskip("tokenizers")
    model, d = spm_model
    d = d if order == "dict.txt" else _reordered(d, padding="madeupword")
    original = open(model, "rb").read()
    proto, _ = aligned_model(original, d.symbols)
    tokenizer = fast_tokenizer(proto, d.symbols)
    assert [tokenizer.id_to_token(i) for i in range(len(d))] == d.symbols
    assert tokenizer.get_vocab_size() == len(d)
    old = _processor(original)
    for line in _lines() + ["  Größe:   12,5 MB  ", "", "madeupword xmadeupword"]:
        ids = [d.index(p) for p in old.encode(line, out_type=str)]
        assert tokenizer.encode(line).ids == [d.bos()] + ids + [d.eos()]
    assert tokenizer.encode("Datei <mask>").ids[-2:] == [d.index("<mask>"), d.eos()]
    with pytest.raises(VecoUserError, match="not aligned to the dictionary"):
        unigram_vocab(original, d.symbols)


def test_a_tokenizer_read_with_other_ids_is_refused(spm_model):
    """What transformers 5's ``XLMRobertaTokenizer(vocab_file=...)`` saved: its five-token
    default vocabulary, every piece <unk>."""
    transformers = pytest.importorskip("transformers")
    from tokenizers import Tokenizer
    from tokenizers.models import Unigram

    from veco_plugin.export.hf import check_tokenizer

    _, d = spm_model
    default = [(s, 0.0) for s in ("<s>", "<pad>", "</s>", "<unk>", "<mask>")]
    tokenizer = transformers.PreTrainedTokenizerFast(
        tokenizer_object=Tokenizer(Unigram(default, unk_id=3, byte_fallback=False))
    )
    n = len(d) - 4
    with pytest.raises(VecoUserError, match=rf"other ids than fairseq's: {n} symbols, e.g. '"):
        check_tokenizer(tokenizer, d, transformers.__version__)
