"""XLM's translation LM over the concatenated pair ``x̂ ‖ ŷ`` (``bi_tlm``).

The same request also carries what other bilingual terms read from that forward
(XLM-Align's pointer network, WEAM's word exchange): ``concat_request``."""

from dataclasses import dataclass, field, replace
from typing import Any, Dict

from fairseq.dataclass import FairseqDataclass

from ..errors import VecoUserError
from ..models.requests import Packing, PlugOut, Request
from .base import VecoTerm
from .scores import head_scores, summed


@dataclass
class TlmSettings(FairseqDataclass):
    tlm_reset_positions: bool = field(
        default=False,
        metadata={
            "help": "restart positions at the second sentence of TLM (XLM); default: "
            "continuous (VECO, WEAM)"
        },
    )


def concat_request(
    requests: Dict[str, Request], batch: Dict, reset_positions: bool, **parts: Any
) -> PlugOut:
    """The plug-out request ``bi_tlm`` over ``concat_tokens`` (B, Tx+Ty; packed: R
    rows of several pairs), created by the first bilingual term that needs it;
    ``parts`` (``masked``, ``pointer``, ``exchange``) are what the calling term adds
    to it."""
    request = requests.get("bi_tlm")
    if request is None:
        packing = Packing.of(batch, "concat", "reset_positions" if reset_positions else "positions")
        request = PlugOut(
            batch["concat_tokens"],
            first_lengths=batch["first_lengths"] if reset_positions and not packing else None,
            padded=batch.get("concat_padded", True),
            packing=packing,
        )
    assert isinstance(request, PlugOut)
    request = replace(request, **parts)
    requests["bi_tlm"] = request
    return request


# the terms computed on the concatenated pair (``concat_request``)
CONCAT_KEYS = ("bi_tlm", "bi_dwa", "bi_cp")


class TranslationTerm(VecoTerm):
    keys = ("bi_tlm",)

    @staticmethod
    def check_settings(cfg, weights):
        """``--tlm-reset-positions`` changes the forward of the concatenated pair alone
        (``CONCAT_KEYS``): with none of them weighted it would change nothing."""
        if getattr(cfg, "tlm_reset_positions", False) and not any(
            weights.get(key) for key in CONCAT_KEYS
        ):
            raise VecoUserError(
                "--tlm-reset-positions acts on the concatenated pair x̂ ‖ ŷ alone (bi_tlm, "
                "and bi_dwa/bi_cp on the same forward), and none has a weight here: drop "
                "--tlm-reset-positions"
            )

    def requests(self, kind, batch, requests):
        if kind == "bi" and self.on("bi_tlm"):
            masked, count = batch["concat_target"].ne(self.pad), batch.get("concat_masked")
            concat_request(
                requests,
                batch,
                self.cfg.tlm_reset_positions,
                masked=masked,
                masked_count=count,
                target=batch["concat_target"],
            )

    def add(self, kind, batch, outputs, terms):
        if kind == "bi" and self.on("bi_tlm"):
            out = outputs["bi_tlm"]
            _, loss, correct = head_scores(out.logits, out.scores, batch["concat_target"], self.pad)
            terms["bi_tlm"] = dict(summed(loss, correct), key="bi_tlm")
