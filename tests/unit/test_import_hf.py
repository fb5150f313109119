"""veco_plugin.export.import_hf: Hugging Face XLM-R directories (built here with transformers in
the published configs' layout, random weights, tiny sizes) -> fairseq's released XLM-R layout.
The fairseq model computes what the transformers one computes (every layer, MLM and
classification logits), both directions of the round trip give the tensors back bit for bit,
and bad directories end in one line."""

import json
import os
import shutil
import sys

import pytest
import torch

from tests.helpers.hf_xlmr import CONFIG, hf_dir, xlmr_spm
from tests.helpers.toy import random_tokens
from veco_plugin.corpora import subwords
from veco_plugin.errors import VecoUserError
from veco_plugin.export.import_hf import import_model
from veco_plugin.export.keymap import TOKEN_TYPES, from_transformers

transformers = pytest.importorskip("transformers")

TOL = 1e-5


@pytest.fixture(scope="module")
def spm_model(tmp_path_factory):
    return xlmr_spm(tmp_path_factory.mktemp("xlmr_spm"))


def _fairseq(out):
    from fairseq.models.roberta import XLMRModel

    return XLMRModel.from_pretrained(str(out), checkpoint_file="model.pt").model.eval()


def _compare(hf, fairseq_model, d, head=True):
    tokens = random_tokens(d, 4, 20, seed=1, pad_tail=5)
    real = tokens.ne(d.pad())
    with torch.no_grad():
        logits, extra = fairseq_model(tokens, return_all_hiddens=True)
        out = hf(input_ids=tokens, attention_mask=real.long(), output_hidden_states=True)
    states = out.hidden_states
    assert len(states) == len(extra["inner_states"]) == CONFIG["num_hidden_layers"] + 1
    for ours, theirs in zip(extra["inner_states"], states):
        torch.testing.assert_close(ours.transpose(0, 1)[real], theirs[real], atol=TOL, rtol=0)
    if head:
        torch.testing.assert_close(logits[real], out.logits[real], atol=TOL, rtol=0)
    return tokens, real


@pytest.mark.parametrize(
    "safetensors,shard,weights",
    [
        (True, "", "model.safetensors"),
        (True, "20KB", "model.safetensors.index.json"),
        (False, "", "pytorch_model.bin"),
    ],
    ids=["safetensors", "sharded", "pytorch_model.bin"],
)
def test_a_masked_lm_computes_what_transformers_computes(
    spm_model, tmp_path, safetensors, shard, weights, monkeypatch
):
    """Every layer and the MLM logits, with padding; the token-type row (not zero) folded
    into the position table. The import itself runs without transformers."""
    hf = hf_dir(tmp_path / "hf", "XLMRobertaForMaskedLM", spm_model, safetensors, shard=shard)
    with monkeypatch.context() as m:
        m.setitem(sys.modules, "transformers", None)  # import transformers: ImportError
        result = import_model(str(tmp_path / "hf"), str(tmp_path / "out"))
    assert sorted(os.listdir(tmp_path / "out")) == [
        "dict.txt",
        "model.pt",
        "sentencepiece.bpe.model",
    ]
    assert os.path.basename(result.weights) == weights
    assert result.report.head and result.report.token_types_folded > 0
    # the pipeline binarizes with this dict.txt (prepare-pretraining-data.sh --spm-model)
    subwords.write_dictionary(
        str(tmp_path / "out" / "sentencepiece.bpe.model"), str(tmp_path / "d")
    )
    assert (tmp_path / "d").read_text() == (tmp_path / "out" / "dict.txt").read_text()
    model = _fairseq(tmp_path / "out")
    _compare(hf, model, spm_model[1])


def test_a_model_without_lm_head_and_its_pooler(spm_model, tmp_path, caplog):
    """``XLMRobertaModel``: the features are the model's; the pooler is dropped and the
    missing LM head starts fresh, loudly."""
    hf = hf_dir(tmp_path / "hf", "XLMRobertaModel", spm_model)
    result = import_model(str(tmp_path / "hf"), str(tmp_path / "out"))
    assert not result.report.head
    assert result.report.dropped == {"XLMRobertaModel's pooler (fairseq has none)": 2}
    assert "NO LM HEAD" in caplog.text
    model = _fairseq(tmp_path / "out")
    _compare(hf, model, spm_model[1], head=False)
    lm = model.encoder.lm_head
    assert lm.weight is model.encoder.sentence_encoder.embed_tokens.weight
    assert not lm.bias.any() and torch.equal(
        lm.layer_norm.weight, torch.ones(CONFIG["hidden_size"])
    )


def test_a_sequence_classifier_keeps_its_head(spm_model, tmp_path):
    """VECO's NLU release is read with ``XLMRobertaForSequenceClassification``: its head is
    fairseq's classification head (the same logits), its missing LM head starts fresh."""
    hf = hf_dir(tmp_path / "hf", "XLMRobertaForSequenceClassification", spm_model, False)
    result = import_model(str(tmp_path / "hf"), str(tmp_path / "out"), head_name="xnli")
    assert result.report.classes == 3 and not result.report.head
    model = _fairseq(tmp_path / "out")
    tokens, real = _compare(hf.roberta, model, spm_model[1], head=False)
    with torch.no_grad():
        ours = model(tokens, features_only=True, classification_head_name="xnli")[0]
        theirs = hf(input_ids=tokens, attention_mask=real.long()).logits
    torch.testing.assert_close(ours, theirs, atol=TOL, rtol=0)


def _tensors(directory):
    from safetensors.torch import load_file

    return load_file(str(directory / "model.safetensors"))


def test_import_then_export_gives_the_tensors_back(spm_model, tmp_path):
    """Bit-equal, every tensor (token types zero as in every converted XLM-R), and the
    exported tokenizer gives the same ids as the original's."""
    from veco_plugin.checkpoints.encoder import load_encoder
    from veco_plugin.export.hf import export_model

    hf_dir(tmp_path / "hf", "XLMRobertaForMaskedLM", spm_model, zero_types=True)
    import_model(str(tmp_path / "hf"), str(tmp_path / "out"))
    model, d = load_encoder(str(tmp_path / "out" / "model.pt"))
    export_model(
        model, d, str(tmp_path / "out" / "sentencepiece.bpe.model"), str(tmp_path / "back")
    )
    original, back = _tensors(tmp_path / "hf"), _tensors(tmp_path / "back")
    assert set(original) <= set(back)
    for key, value in original.items():
        assert torch.equal(value, back[key]), key
    tokenizer = json.load(open(tmp_path / "back" / "tokenizer.json", encoding="utf-8"))
    assert [v[0] for v in tokenizer["model"]["vocab"]] == d.symbols


def test_export_then_import_gives_the_fairseq_tensors_back(spm_model, tmp_path):
    from tests.helpers.toy import build
    from veco_plugin.export.hf import export_model

    model_file, d = spm_model
    sizes = dict(encoder_layers=2, encoder_embed_dim=32, encoder_ffn_embed_dim=64)
    roberta = build("roberta", d, seed=5, encoder_attention_heads=4, **sizes).eval()
    export_model(roberta, d, model_file, str(tmp_path / "hf"))
    import_model(str(tmp_path / "hf"), str(tmp_path / "out"))
    from veco_plugin.checkpoints.trusted_load import load_trusted

    state = load_trusted(str(tmp_path / "out" / "model.pt"))["model"]
    mine = roberta.state_dict()
    assert set(state) == set(mine)
    for key, value in mine.items():
        assert torch.equal(value, state[key]), key


# --- the key table and bad input --------------------------------------------------------


@pytest.fixture(scope="module")
def mlm_state(spm_model):
    torch.manual_seed(0)
    config = transformers.XLMRobertaConfig(vocab_size=len(spm_model[1]), **CONFIG)
    return dict(transformers.XLMRobertaForMaskedLM(config).state_dict())


def test_the_key_table_refuses_what_fairseq_cannot_hold(mlm_state):
    with pytest.raises(VecoUserError, match=r"1 tensors have no place .*roberta\.extra"):
        from_transformers({**mlm_state, "roberta.extra": torch.zeros(1)})
    token_classifier = {"classifier.weight": torch.zeros(5, 32), "classifier.bias": torch.zeros(5)}
    with pytest.raises(VecoUserError, match=r"2 tensors .* \(e.g. classifier.weight\)"):
        from_transformers({**mlm_state, **token_classifier})  # XLMRobertaForTokenClassification
    key = "roberta.encoder.layer.1.output.dense.bias"
    with pytest.raises(VecoUserError, match=rf"1 encoder tensors are missing \(e.g. {key}\)"):
        from_transformers({k: v for k, v in mlm_state.items() if k != key})
    untied = {**mlm_state, "lm_head.decoder.weight": mlm_state["lm_head.decoder.weight"] + 1}
    with pytest.raises(VecoUserError, match="an untied LM head cannot be imported"):
        from_transformers(untied)
    two = {**mlm_state, TOKEN_TYPES: torch.zeros(2, CONFIG["hidden_size"])}
    with pytest.raises(VecoUserError, match="has 2 token types"):
        from_transformers(two)
    old = {**mlm_state, "roberta.embeddings.position_ids": torch.arange(66)[None]}
    assert from_transformers(old)[1].dropped == {"transformers' position-id buffer": 1}


def _edit_config(directory, **changes):
    path = directory / "config.json"
    config = json.load(open(path))
    config.update(changes)
    path.write_text(json.dumps(config))


def test_bad_directories_are_one_line(spm_model, tmp_path):
    src = tmp_path / "hf"
    hf_dir(src, "XLMRobertaForMaskedLM", spm_model)

    def bad(name, edit):
        path = tmp_path / name
        shutil.copytree(src, path)
        edit(path)
        with pytest.raises(VecoUserError) as info:
            import_model(str(path), str(tmp_path / f"{name}.out"))
        assert "\n" not in str(info.value)
        return str(info.value)

    assert "model_type 'bert', not 'xlm-roberta'" in bad(
        "bert", lambda p: _edit_config(p, model_type="bert")
    )
    assert "no weights: expected model.safetensors or pytorch_model.bin" in bad(
        "noweights", lambda p: os.remove(p / "model.safetensors")
    )
    assert "layer_norm_eps 1e-12" in bad("eps", lambda p: _edit_config(p, layer_norm_eps=1e-12))
    n = len(spm_model[1])
    assert (
        f"the model has {n} token embeddings (config vocab_size {n + 8}) but "
        f"sentencepiece.bpe.model gives {n} symbols"
    ) in bad("vocab", lambda p: _edit_config(p, vocab_size=n + 8))

    def spm_of(**ids):  # a sentencepiece model of another vocabulary or layout
        def write(path):
            model, _ = xlmr_spm(path, 200, **ids)
            os.replace(model, path / "sentencepiece.bpe.model")

        return write

    assert "tokenizer.json does not match sentencepiece.bpe.model (id " in bad("spm", spm_of())
    assert "pieces 0-2 are ['<unk>'," in bad("layout", spm_of(bos_id=-1, eos_id=-1))
