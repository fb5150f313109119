"""The table of pre-training objectives: one row per registered criterion.

The quickstart (which runs to train, its labels, what starts from what), its report,
the benchmarks (which variants to time) and the tests read this table; adding an
objective is its criterion module plus one row here.
"""

from dataclasses import dataclass, field
from typing import Any, Dict, Mapping, Optional, Tuple

from fairseq.criterions import CRITERION_DATACLASS_REGISTRY, CRITERION_REGISTRY
from fairseq.dataclass.utils import merge_with_parent
from omegaconf import OmegaConf

BenchmarkVariant = Tuple[str, Mapping[str, Any]]


@dataclass(frozen=True)
class Objective:
    criterion: str
    """fairseq registry name (``--criterion``)."""
    label: str
    """how tables and reports name it."""
    run: str
    """the quickstart's name for its pre-training run (stage ``pretrain-<run>``)."""
    translate: bool = True
    """the quickstart fine-tunes a translation model from it (a row of the BLEU table)."""
    starts_from: Optional[str] = None
    """``run`` of the row whose checkpoint it continues (a cold start); None: from scratch."""
    aligns: bool = False
    """the quickstart word-aligns test pairs with it, and with ``starts_from`` as "before"."""
    benchmark: Tuple[BenchmarkVariant, ...] = field(default=())
    """variants ``benchmarks/run.py`` times against fairseq's ``masked_lm``: (name,
    criterion settings that differ from the defaults)."""
    quickstart_updates: str = "pretrain_updates"
    """the quickstart setting (``--pretrain-updates`` -> ``pretrain_updates``) that gives
    its pre-training updates; 0 skips the row, the rows that start from it and, for an
    aligning row, the align stage."""
    quickstart_switch: bool = False
    """the quickstart has ``--<run>`` / ``--no-<run>`` (on by default) to skip the row."""
    note: str = ""
    """a caveat the quickstart report prints under its table as "<label> row: <note>"
    when the row is in the table."""


OBJECTIVES: Tuple[Objective, ...] = (
    Objective(
        "ca_mlm",
        "VECO (ca_mlm: CA-MLM + TLM)",
        run="veco",
        benchmark=(
            ("ca_mlm", {"tlm_weight": 0.0}),
            ("ca_mlm_nostopgrad", {"tlm_weight": 0.0, "no_stop_gradient": True}),
            ("ca_mlm_tlm", {}),
        ),
    ),
    Objective(
        "tlm",
        "XLM (tlm)",
        run="xlm",
        benchmark=(("tlm", {}),),
        quickstart_switch=True,
        note="tlm never runs the cross-attention, so veco-init-nmt copies untrained "
        "(randomly initialized) weights into the decoder's encoder-attention",
    ),
    Objective(
        "dwa",
        "XLM-Align (dwa: MLM + TLM + DWA)",
        run="dwa",
        translate=False,
        starts_from="veco",
        aligns=True,
        benchmark=(("dwa", {}),),
        quickstart_updates="dwa_updates",
    ),
)


def objective(key: str) -> Objective:
    """The row whose ``criterion`` or ``run`` is ``key``."""
    for row in OBJECTIVES:
        if key in (row.criterion, row.run):
            return row
    raise KeyError(
        f"no objective {key!r}: choose from {', '.join(o.criterion for o in OBJECTIVES)}"
    )


def criterion_config(name: str, **settings: Any) -> Any:
    """The registered criterion ``name``'s dataclass config with ``settings`` over its
    defaults, as fairseq builds it from the command line (global ``II(...)`` fields
    resolve to fairseq's defaults)."""
    from fairseq.dataclass.configs import FairseqConfig

    dc = CRITERION_DATACLASS_REGISTRY[name]
    cfg = merge_with_parent(dc(), OmegaConf.create(dict(settings, _name=name)))
    root = OmegaConf.structured(FairseqConfig)
    root.criterion = cfg
    return root.criterion


def build_criterion(name: str, task: Any, **settings: Any) -> Any:
    """``--criterion name`` with ``settings``, built the way fairseq-train builds it."""
    return CRITERION_REGISTRY[name].build_criterion(criterion_config(name, **settings), task)


def benchmark_variants() -> Dict[str, Tuple[str, Mapping[str, Any]]]:
    """Every benchmark variant of the table: name -> (criterion, settings)."""
    return {name: (row.criterion, s) for row in OBJECTIVES for name, s in row.benchmark}
