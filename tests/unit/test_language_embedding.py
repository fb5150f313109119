"""``--language-embeddings``: XLM's language vectors added by the token's language
(:mod:`veco_plugin.modules.language_embedding`). Exact: the lookup is the sum it
promises, and a model with language embeddings computes the same features as one whose
token rows carry their language's vector (the math of disjoint vocabularies); the LM
head stays tied to the token rows alone; the table travels in the state dict."""

import torch

from tests.helpers.toy import build, random_tokens, toy_dictionary
from veco_plugin.modules.language_embedding import NO_LANGUAGE, TokenLanguageEmbedding

EMBED = "encoder.sentence_encoder.embed_tokens"


def _table(d) -> torch.Tensor:
    """Specials none; then alternately language 0 and 1."""
    table = torch.full((len(d),), NO_LANGUAGE)
    table[d.nspecial :] = torch.arange(len(d) - d.nspecial) % 2
    return table


def test_the_lookup_adds_the_tokens_language_vector_and_nothing_for_none():
    torch.manual_seed(0)
    emb = TokenLanguageEmbedding(10, 4, padding_idx=1, count=2)
    torch.nn.init.normal_(emb.languages.weight)
    with torch.no_grad():
        emb.languages.weight[2] = 0  # the none row, as init_bert_params leaves it
    lang = torch.tensor([-1, -1, -1, -1, 0, 0, 1, 1, -1, 0])
    emb.set_languages(lang)
    tokens = torch.randint(0, 10, (3, 7))
    vectors = emb.languages.weight[lang.clamp(min=0)] * lang.ge(0).unsqueeze(-1)
    assert torch.equal(emb(tokens), emb.weight[tokens] + vectors[tokens])
    emb(tokens).sum().backward()
    assert emb.languages.weight.grad[2].eq(0).all()  # the none row never trains


def test_features_equal_those_of_token_rows_shifted_by_their_language():
    d = toy_dictionary()
    a = build("veco_tiny", d, seed=0, language_embeddings=2).eval()
    a.encoder.sentence_encoder.embed_tokens.set_languages(_table(d))
    state = a.state_dict()
    languages = state[f"{EMBED}.languages.weight"]
    shifted = state[f"{EMBED}.weight"] + languages[state[f"{EMBED}.token_language"]]
    b = build("veco_tiny", d, seed=0).eval()
    own = {k: v for k, v in state.items() if k in b.state_dict()}
    # the head's weight is the same tensor as the token rows: both keys carry it
    b.load_state_dict({**own, f"{EMBED}.weight": shifted, "encoder.lm_head.weight": shifted})
    tokens = random_tokens(d, 3, 12, seed=1, pad_tail=2)
    features_a, _ = a(tokens, features_only=True)
    features_b, _ = b(tokens, features_only=True)
    # exact: the same row + vector additions (in the lookup or in the shifted rows), then
    # the same layers on the same shapes
    assert torch.equal(features_a, features_b)
    # XLM's output layer has no language term: the head is tied to the token rows
    assert a.encoder.lm_head.weight is a.encoder.sentence_encoder.embed_tokens.weight


def test_the_table_is_saved_and_a_model_without_keeps_its_layout():
    d = toy_dictionary()
    a = build("veco_tiny", d, seed=0, language_embeddings=2)
    a.encoder.sentence_encoder.embed_tokens.set_languages(_table(d))
    c = build("veco_tiny", d, seed=1, language_embeddings=2)
    c.load_state_dict(a.state_dict())
    assert torch.equal(c.encoder.sentence_encoder.embed_tokens.token_language,
                       torch.where(_table(d).ge(0), _table(d), 2))  # fmt: skip
    plain = build("veco_tiny", d, seed=0).state_dict()
    assert set(a.state_dict()) - set(plain) == {f"{EMBED}.languages.weight",
                                                f"{EMBED}.token_language"}  # fmt: skip
    assert not any("languages" in k or "token_language" in k for k in plain)
