"""XLM's language embeddings (Lample & Conneau 2019; ALIGN-MLM App. G.3-G.4) for
vocabularies whose languages share no token: the token embedding plus a learned vector
of the token's language.

XLM adds to every token the embedding of its sentence's language. When each non-special
token belongs to one language (a derived language's copies, two scripts), a token's
language is a property of the token, so the sum is a lookup: this module keeps the
token -> language table in the model (a buffer, saved with the checkpoint) and every
path that embeds tokens (pre-training's requests, RoBERTa's forward, fine-tuning, the
tools) gets the language vector without any data carrying language IDs. Specials
(``<s>``, ``</s>``, ``<pad>``, ``<unk>``, ``<mask>``) and tokens the table leaves out get
none, where XLM gives them their sentence's.

It is an ``nn.Embedding`` whose ``weight`` is the token table: RoBERTa's LM head ties
its output projection to that weight alone (XLM's output layer has no language term),
and every reader of ``embed_tokens.weight`` (alignment scores, exports) sees the tokens'
own vectors.
"""

import torch
from torch import Tensor, nn

NO_LANGUAGE = -1
"""A :meth:`TokenLanguageEmbedding.set_languages` entry for a token of no language."""


class TokenLanguageEmbedding(nn.Embedding):
    """``forward(tokens)`` (B, T) -> ``weight[tokens] + languages.weight[language[tokens]]``
    (B, T, C); ``languages`` has ``count`` learned rows and a zero row (the padding row:
    never trained) for tokens of no language."""

    token_language: Tensor
    """(V,) each token's row of ``languages`` (a buffer: saved with the model)."""

    def __init__(self, num_embeddings: int, embedding_dim: int, padding_idx: int, count: int):
        super().__init__(num_embeddings, embedding_dim, padding_idx)
        self.count = count
        self.languages = nn.Embedding(count + 1, embedding_dim, padding_idx=count)
        self.register_buffer("token_language", torch.full((num_embeddings,), count))

    def set_languages(self, language: Tensor) -> None:
        """``language`` (V,): each token's language index in [0, count), or
        :data:`NO_LANGUAGE`."""
        if language.shape != self.token_language.shape:
            raise ValueError(f"{tuple(language.shape)} languages for {self.num_embeddings} tokens")
        if ((language < NO_LANGUAGE) | (language >= self.count)).any():
            raise ValueError(f"language indices must be in [0, {self.count}) or {NO_LANGUAGE}")
        none = torch.full_like(language, self.count)
        self.token_language.copy_(torch.where(language.eq(NO_LANGUAGE), none, language))

    def forward(self, tokens: Tensor) -> Tensor:
        return super().forward(tokens) + self.languages(self.token_language[tokens])

    def extra_repr(self) -> str:
        return f"{super().extra_repr()}, languages={self.count}"
