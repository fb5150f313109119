"""BERT-style masking that never touches special symbols."""

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class MaskingScheme:
    """Mask ``prob`` of the maskable tokens; of those, replace ``1 - keep - random``
    by ``<mask>``, ``random`` by a random ordinary token and keep ``keep``
    (80/10/10 by default). ``first_ordinary`` and ``vocab_end`` bound the ids of
    ordinary symbols: everything below ``first_ordinary`` (bos, pad, eos, unk, ...)
    and ``mask_idx`` are never masked nor drawn."""

    prob: float
    mask_idx: int
    pad_idx: int
    first_ordinary: int
    vocab_end: int
    random: float = 0.1
    keep: float = 0.1

    def apply(self, tokens: np.ndarray, rng: np.random.Generator):
        """Args: tokens (T,) int. Returns ``(masked_input, target)``, both (T,):
        target holds the original token at masked positions and pad elsewhere."""
        maskable = (tokens >= self.first_ordinary) & (tokens != self.mask_idx)
        candidates = np.flatnonzero(maskable)
        masked = tokens.copy()
        target = np.full_like(tokens, self.pad_idx)
        if len(candidates) == 0:
            return masked, target
        # at least one prediction per segment; stochastic rounding otherwise
        n = max(1, int(self.prob * len(candidates) + rng.random()))
        chosen = rng.choice(candidates, size=min(n, len(candidates)), replace=False)
        target[chosen] = tokens[chosen]
        roll = rng.random(len(chosen))
        to_mask = chosen[roll < 1.0 - self.keep - self.random]
        to_random = chosen[(roll >= 1.0 - self.keep - self.random) & (roll < 1.0 - self.keep)]
        masked[to_mask] = self.mask_idx
        if len(to_random):
            draws = rng.integers(self.first_ordinary, self.vocab_end - 1, size=len(to_random))
            # skip over <mask> so it is never drawn as a "random" token
            draws = draws + (draws >= self.mask_idx)
            masked[to_random] = draws
        return masked, target
