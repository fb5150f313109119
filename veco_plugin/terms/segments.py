"""Masked LM over each segment of a pair on its own (``<kind>_mlm``) and VECO's
CA-MLM cross terms (``<kind>_ca``, eqs. 12-13), for ``mono`` and ``bi`` sub-batches."""

from dataclasses import dataclass, field

import torch
from fairseq.dataclass import FairseqDataclass

from ..errors import VecoUserError
from ..models.requests import Packing, PlugOut, TwoStream
from ..modules.pair_layout import selected
from .base import VecoTerm
from .scores import head_scores, summed


@dataclass
class CaSettings(FairseqDataclass):
    no_stop_gradient: bool = field(
        default=False,
        metadata={
            "help": "let the cross terms back-propagate into H^L (ablation; paper detaches it)"
        },
    )


class SegmentTerms(VecoTerm):
    """With a ``<kind>_ca`` weight: one two-stream request per sub-batch (``pair_tokens``
    (2B, T): rows :B the x̂, rows B: the paired ŷ; packed, rows :R the x̂ of several
    pairs, rows R: their ŷ) gives the H-stream terms
    ``<kind>_x_mlm``, ``<kind>_y_mlm`` (eqs. 10-11) and the S-stream terms
    ``<kind>_x_ca``, ``<kind>_y_ca``. Without: a plug-out request gives ``<kind>_mlm``
    (XLM's MLM), one term over both segments."""

    keys = ("mono_mlm", "bi_mlm", "mono_ca", "bi_ca")

    @staticmethod
    def check_settings(cfg, weights):
        """``--no-stop-gradient`` changes the cross terms (eqs. 12-13) alone: with
        neither ``mono_ca`` nor ``bi_ca`` weighted it would change nothing."""
        if getattr(cfg, "no_stop_gradient", False) and not (
            weights.get("mono_ca") or weights.get("bi_ca")
        ):
            raise VecoUserError(
                "--no-stop-gradient acts on the CA-MLM cross terms alone (mono_ca/bi_ca, "
                "VECO eqs. 12-13), and none has a weight here: drop --no-stop-gradient"
            )

    def requests(self, kind, batch, requests):
        mlm, ca = self.on(f"{kind}_mlm"), self.on(f"{kind}_ca")
        masked = batch["pair_target"].ne(self.pad)
        if ca:
            requests[f"{kind}_streams"] = TwoStream(
                batch["pair_tokens"],
                masked,
                stop_gradient=not self.cfg.no_stop_gradient,
                need_h=mlm,
                need_s=True,
                masked_count=batch.get("pair_masked"),
                padded=batch.get("pair_padded", True),
                packing=Packing.of(batch, "pair"),
                target=batch["pair_target"],
            )
        elif mlm:
            requests[f"{kind}_mlm"] = PlugOut(
                batch["pair_tokens"],
                masked,
                masked_count=batch.get("pair_masked"),
                padded=batch.get("pair_padded", True),
                packing=Packing.of(batch, "pair"),
                target=batch["pair_target"],
            )

    def add(self, kind, batch, outputs, terms):
        target = batch["pair_target"]
        if f"{kind}_mlm" in outputs:
            out = outputs[f"{kind}_mlm"]
            _, loss, correct = head_scores(out.logits, out.scores, target, self.pad)
            terms[f"{kind}_mlm"] = dict(summed(loss, correct), key=f"{kind}_mlm")
        if f"{kind}_streams" not in outputs:
            return
        streams = outputs[f"{kind}_streams"]
        for stream, logits, scores in (
            ("mlm", streams.h_logits, streams.h_scores),
            ("ca", streams.s_logits, streams.s_scores),
        ):
            if logits is None and scores is None:
                continue
            masked, loss, correct = head_scores(logits, scores, target, self.pad)
            # the scores (M,) follow the masked positions row by row
            if "pair_first" in batch:  # packed: a pair may lie turned (data.packing)
                is_x = selected(batch["pair_first"], masked, loss.numel())
            else:  # one pair a row: x's rows come first
                n_x = masked[: masked.size(0) // 2].sum()
                is_x = torch.arange(loss.numel(), device=loss.device) < n_x
            key = f"{kind}_{stream}"
            terms[f"{kind}_x_{stream}"] = dict(summed(loss, correct, is_x), key=key)
            terms[f"{kind}_y_{stream}"] = dict(summed(loss, correct, ~is_x), key=key)
