"""What a loss term is: a family of named terms computed from one model call."""

import math
from typing import Any, Dict, List, Mapping, Optional, Tuple

from ..errors import VecoUserError
from ..models.requests import Request


class VecoTerm:
    """A family of loss terms, identified by ``keys`` (``--terms`` names such as
    ``mono_mlm`` or ``bi_tlm``; a key is ``<sub-batch>_<term>`` or, for terms that
    read no batch, a bare name such as ``align``).

    A criterion holds the families whose keys carry a non-zero weight and, each step:

    1. ``requests(kind, batch, requests)`` per sub-batch (``mono``/``bi``) and
       ``shared_requests(requests)`` once: add or extend the model requests (see
       ``VecoModel.forward``); families may share a request (DWA's pointer and WEAM's
       exchange ride on the TLM forward);
    2. the model is called once with all requests;
    3. ``add(kind, batch, outputs, terms)`` and ``add_shared(outputs, sample_size,
       terms)`` turn outputs into logged terms: ``terms[name] = {"key": key, "loss":
       summed loss, "n": count, "correct": count}`` (token terms) or ``{"key", "loss"}``
       plus ``"counts"``: summable counters logged by the family's ``reduce_metrics``.
       The criterion's loss is Σ weight[key] * loss.

    ``extensions`` names model parts the family needs (``VecoModel.build_extension``);
    ``warm_start``: the family fails from random weights (the task warns);
    ``reads_links``: its bilingual batches must carry external word alignments (the task
    refuses data without them when it loads a split).

    Before any of this, when the criterion is built, ``check_settings`` refuses what the
    family's equations forbid, and when the model to train is built, ``check_model``
    what the model cannot run: one line naming the flag, before the first update."""

    keys: Tuple[str, ...] = ()
    extensions: Tuple[str, ...] = ()
    warm_start = False
    reads_links = False

    def __init__(self, cfg: Any, task: Any, weights: Mapping[str, float]):
        self.cfg = cfg
        self.task = task
        self.pad = task.source_dictionary.pad()
        self.weights = weights

    def on(self, key: str) -> bool:
        return self.weights.get(key, 0.0) != 0.0

    @staticmethod
    def check_settings(cfg: Any, weights: Mapping[str, float]) -> None:
        """Refuse (``VecoUserError``) settings of ``cfg`` this family's equations forbid,
        whatever its weight; ``cfg`` may lack the family's settings (read them with
        ``getattr(cfg, name, None)``). ``weights``: the recipe."""

    @staticmethod
    def check_model(cfg: Any, model: Any) -> None:
        """Refuse (``VecoUserError``) a ``model`` (the bare ``VecoModel``) this family
        cannot run on with the settings ``cfg`` (as for ``check_settings``)."""

    def prepare(self, model: Any) -> None:
        """Called with the (wrapped) model before each step's requests."""

    def requests(self, kind: str, batch: Dict, requests: Dict[str, Request]) -> None:
        """Add what this family needs of the ``kind`` sub-batch to the step's requests."""

    def shared_requests(self, requests: Dict[str, Request]) -> None:
        """Add what this family needs once per step, whatever the sub-batches."""

    def add(self, kind: str, batch: Dict, outputs: Dict[str, Any], terms: Dict[str, Dict]) -> None:
        """Add this family's terms of the ``kind`` sub-batch from the model's outputs."""

    def add_shared(self, outputs: Dict[str, Any], sample_size: Any, terms: Dict[str, Dict]) -> None:
        """Add this family's once-per-step terms."""

    @staticmethod
    def reduce_metrics(logging_outputs: List[Dict]) -> None:
        """Log the family's own counters (token terms are logged by the criterion)."""


def check_weight(given: str, value: float) -> None:
    """A loss weight is a finite number >= 0: the loss is Σ weight * term (each term a
    cross-entropy or, for ``align``, -cos), so a negative weight would maximize its
    term and inf/nan would make every update nan. ``given``: how the user wrote it
    (``--dwa-weight -1.0``, ``--terms bi_tlm=-1``)."""
    if not (math.isfinite(value) and value >= 0):
        raise VecoUserError(
            f"{given}: a loss weight must be a finite number >= 0 (0 turns the term "
            "off; a negative weight would maximize that loss)"
        )


def check_range(flag: str, value: Any, low: float, high: float, why: str) -> None:
    """``low <= value <= high`` (nan and None fail), else one line: ``flag value: why``."""
    if value is None or not low <= value <= high:
        raise VecoUserError(f"{flag} {value}: {why}")


def inner_model(model: Any) -> Any:
    """The VecoModel under fairseq's data-parallel wrappers."""
    while hasattr(model, "module"):
        model = model.module
    return model


def key_of(name: str) -> str:
    """The ``--terms`` key of a logged term name (``bi_x_ca`` -> ``bi_ca``)."""
    parts = name.split("_")
    if len(parts) == 3 and parts[1] in ("x", "y"):
        return f"{parts[0]}_{parts[2]}"
    return name


def kind_of(key: str) -> Optional[str]:
    """The sub-batch a key reads (``mono``/``bi``), None for batch-free terms."""
    head = key.split("_", 1)[0]
    return head if head in ("mono", "bi") else None
