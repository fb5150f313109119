"""XTREME's optimizer groups: no weight decay on biases and LayerNorm weights.

XTREME's fine-tuning scripts (``run_tag.py``, ``run_squad.py``, ``run_classify.py``) give
AdamW two groups: the parameters whose name holds ``bias`` or ``LayerNorm.weight`` get no
weight decay, the others ``--weight_decay``. fairseq's optimizers take one flat list of
parameters, so the fine-tuning tasks mark the exempt ones instead (:func:`mark_no_decay`):
fairseq's own ``param_group`` attribute, which its FP16 optimizer copies to the fp32 master
weights when they are not flattened (``--fp16-no-flatten-grads``).
``veco_adamw --no-decay-bias-and-norm`` reads the mark (:func:`decay_groups`).
"""

from typing import Dict, List, Sequence, Union

import torch
from torch import nn

from ..errors import VecoUserError

NO_DECAY = "no_weight_decay"


def mark_no_decay(model: nn.Module) -> None:
    """Mark every bias (a parameter named ``*bias*``, as XTREME's rule) and every
    LayerNorm weight of ``model`` as exempt from weight decay."""
    for module in model.modules():
        for name, param in module.named_parameters(recurse=False):
            if "bias" in name or (isinstance(module, nn.LayerNorm) and name == "weight"):
                param.param_group = NO_DECAY  # type: ignore[attr-defined]


def decay_groups(
    params: Sequence[torch.Tensor], weight_decay: float
) -> List[Dict[str, Union[List[torch.Tensor], float]]]:
    """``params`` as torch optimizer groups: the marked ones without weight decay.

    A model whose parameters carry no mark while weight decay is asked for is refused:
    fairseq flattened them into one tensor (``--fp16``/``--bf16`` without
    ``--fp16-no-flatten-grads``), or the model was not built by a fine-tuning task."""
    exempt = [p for p in params if getattr(p, "param_group", None) == NO_DECAY]
    decayed = [p for p in params if getattr(p, "param_group", None) != NO_DECAY]
    if weight_decay > 0 and not exempt:
        raise VecoUserError(
            "--no-decay-bias-and-norm: no parameter is marked as a bias or LayerNorm weight "
            "(with --fp16/--bf16, add --fp16-no-flatten-grads; the marks come from the "
            "fine-tuning tasks veco_tagging, veco_span_qa, veco_sentence_prediction)"
        )
    groups: List[Dict[str, Union[List[torch.Tensor], float]]] = []
    if decayed:
        groups.append({"params": decayed})
    if exempt:
        groups.append({"params": exempt, "weight_decay": 0.0})
    return groups
