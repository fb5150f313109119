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
from ..modules.pair_layout import split_pair
from .base import VecoTerm
from .scores import masked_cross_entropy, selected
from .translation_lm import concat_request

MISSING_LINKS = (
    "bi_cp (WEAM) needs word alignments with the bitext: DATA/bi/<pair>/<split>.align.<pair>."
    "{bin,idx} are missing; give scripts/prepare-pretraining-data.sh a TEXT/train.align "
    "Pharaoh file (or --align-with eflomal), or binarize with fairseq-preprocess --align-suffix"
)


class WordExchangeTerm(VecoTerm):
    """``bi_cp``: summed CE of the exchanged predictions, one per masked piece with at
    least one aligned partner (x side then y side)."""

    keys = ("bi_cp",)
    extensions = ("exchange",)
    reads_links = True

    def _selection(self, batch):
        """Masked pieces (B, W) of each side that have a partner."""
        if "links" not in batch:
            raise VecoUserError(MISSING_LINKS)
        links, first = batch["links"], batch["first_lengths"]
        x_masked, y_masked = split_pair(batch["concat_target"].ne(self.pad), first, links.size(1))
        return x_masked & links.any(2), y_masked & links.any(1)

    def requests(self, kind, batch, requests):
        if kind != "bi":
            return
        select_x, select_y = self._selection(batch)
        parts = Exchange(batch["links"], batch["first_lengths"], select_x, select_y)
        concat_request(requests, batch, self.cfg.tlm_reset_positions, exchange=parts)

    def add(self, kind, batch, outputs, terms):
        if kind != "bi":
            return
        select_x, select_y = self._selection(batch)
        width = select_x.size(1)
        x_gold, y_gold = split_pair(batch["concat_target"], batch["first_lengths"], width)
        logits = outputs["bi_tlm"].exchange_logits  # (M', V)
        gold = selected(  # (M',) x's rows first
            torch.stack([x_gold, y_gold]), torch.stack([select_x, select_y]), logits.size(0)
        )
        terms["bi_cp"] = dict(masked_cross_entropy(logits, gold), key="bi_cp")
