"""WEAM's cross-lingual prediction (``bi_cp``; Yang et al., eqs. 5-8, 10).

The TLM forward of the masked concatenated pair (WEAM's multilingual prediction,
eqs. 1-4 and 9, is ``bi_tlm`` with continuous positions) also exchanges the last-layer
representations of aligned pieces between the two sentences (eq. 5), transforms them
(eqs. 6-7) and predicts each masked piece that has a partner from its partners'
representations with the tied output layer (eq. 8). Masked pieces without a partner
contribute nothing; a pair without links contributes zero.

Links come from external word alignments binarized with the bitext
(``fairseq-preprocess --align-suffix``), lifted to pieces by the data
(``batch["links"]`` (B, W, W) bool, pair layout)."""

import torch

from ..errors import VecoUserError
from ..models.requests import Exchange
from ..modules.pair_layout import Halves, selected
from .base import VecoTerm
from .scores import summed, token_scores
from .translation_lm import concat_request

MISSING_LINKS = (
    "bi_cp (WEAM) needs word alignments with the bitext: DATA/bi/<pair>/<split>.align.<pair>."
    "{bin,idx} are missing; give scripts/prepare-pretraining-data.sh a TEXT/train.align "
    "Pharaoh file (or --align-with eflomal), or binarize with fairseq-preprocess --align-suffix"
)


class WordExchangeTerm(VecoTerm):
    """``bi_cp``: summed CE of the exchanged predictions, one per masked piece with at
    least one aligned partner (x side then y side). The model predicts at every masked
    piece (as many rows as the MLM head, so no host sync learns a count); the pieces
    without a partner are left out of the sum."""

    keys = ("bi_cp",)
    extensions = ("exchange",)
    reads_links = True

    def _masked(self, batch):
        """The masked pieces (2, B, W) of each side, x then y, and whether each has a
        partner (2, B, W)."""
        if "links" not in batch:
            raise VecoUserError(MISSING_LINKS)
        links = batch["links"]
        masked = Halves.of(batch).mask(batch["concat_target"].ne(self.pad))
        return masked, torch.stack([links.any(2), links.any(1)])

    def requests(self, kind, batch, requests):
        if kind != "bi":
            return
        select, _ = self._masked(batch)
        parts = Exchange(batch["links"], Halves.of(batch), select)
        masked, count = batch["concat_target"].ne(self.pad), batch.get("concat_masked")
        concat_request(
            requests, batch, self.cfg.tlm_reset_positions,
            masked=masked, masked_count=count, exchange=parts,
        )  # fmt: skip

    def add(self, kind, batch, outputs, terms):
        if kind != "bi":
            return
        masked, linked = self._masked(batch)
        halves = Halves.of(batch).gather(batch["concat_target"])  # (2, B, W)
        logits = outputs["bi_tlm"].exchange_logits  # (M, V)
        count = logits.size(0)
        gold = selected(halves, masked, count)  # (M,) x's rows first
        scores = token_scores(logits, gold)
        terms["bi_cp"] = dict(summed(*scores, selected(linked, masked, count)), key="bi_cp")
