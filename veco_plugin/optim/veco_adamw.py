"""``--optimizer veco_adamw``: fairseq's ``adam`` flags, torch's fused AdamW.

fairseq's ``--optimizer adam`` is fused only with NVIDIA apex (built from source for
each CUDA); without it, it steps one parameter at a time in Python (``fairseq.optim.adam
.Adam``: ~10 small kernels per parameter tensor). This optimizer takes the same flags
(``--adam-betas``, ``--adam-eps``, ``--weight-decay``, ``--lr``) and steps every
parameter in a few fused kernels (``torch.optim.AdamW(fused=True)``, CUDA or CPU).

The update is fairseq's: Adam with decoupled weight decay (fairseq's ``adam`` is AdamW,
see its docstring) and bias correction; only where ``eps`` enters differs:
``sqrt(v) + eps`` (fairseq) against ``sqrt(v / bc2) + eps`` (torch), i.e. torch's
``eps`` is larger by ``sqrt(1 - beta2^t)``, a difference below ``eps`` itself.

``--no-decay-bias-and-norm``: XTREME's two groups, biases and LayerNorm weights without
weight decay (:mod:`.no_decay`).

Flat parameters: fairseq's ``--fp16`` keeps one flat fp32 copy of all the weights and
asks its optimizer for ``supports_flat_params`` (without it fairseq stops and asks for
``--fp16-no-flatten-grads``). AdamW is elementwise, so one flat tensor steps as the
tensors it holds would; the no-decay groups need the tensors apart, and
``--no-decay-bias-and-norm`` over one flat tensor is refused in one line
(:func:`.no_decay.decay_groups`).
"""

from dataclasses import dataclass, field

import torch
from fairseq.optim import FairseqOptimizer, register_optimizer
from fairseq.optim.adam import FairseqAdam, FairseqAdamConfig

from ..errors import VecoUserError
from .no_decay import decay_groups


@dataclass
class VecoAdamWConfig(FairseqAdamConfig):
    """fairseq's ``adam`` settings (so ``--optimizer adam`` flags carry over)."""

    no_decay_bias_and_norm: bool = field(
        default=False,
        metadata={
            "help": "no weight decay on biases and LayerNorm weights (XTREME's optimizer "
            "groups; the fine-tuning tasks mark them)"
        },
    )


@register_optimizer("veco_adamw", dataclass=VecoAdamWConfig)
class VecoAdamW(FairseqAdam):
    """fairseq's ``adam`` (settings, ``optimizer_config``, BMUF averaging) over
    ``torch.optim.AdamW(fused=True)``."""

    def __init__(self, cfg: VecoAdamWConfig, params):
        for flag, value in (
            ("--fp16-adam-stats", cfg.fp16_adam_stats),
            ("--use-old-adam", cfg.use_old_adam),
            ("--tpu", cfg.tpu),
        ):
            if value:
                raise VecoUserError(
                    f"{flag} is a setting of fairseq's own Adam: use --optimizer adam with it"
                )
        FairseqOptimizer.__init__(self, cfg)  # FairseqAdam's would pick its own Adam
        if cfg.no_decay_bias_and_norm:
            params = decay_groups(params, self.optimizer_config["weight_decay"])
        self._optimizer = torch.optim.AdamW(params, **self.optimizer_config, fused=True)

    @property
    def supports_flat_params(self) -> bool:
        return True

    def clip_grad_norm(self, max_norm, aggregate_norm_fn=None):
        """fairseq's ``clip_grad_norm_`` with the norm in one foreach call: without apex,
        fairseq's takes one norm kernel and one copy per parameter tensor (and warns on
        CUDA every update). The same norm, the same clipping (``--clip-norm``; 0 only
        measures); mixture-of-experts parameters (fairseq's ``expert`` mark, left out of
        the norm) go to fairseq's."""
        params = [p for p in self.params if getattr(p, "grad", None) is not None]
        if not params or any(hasattr(p, "expert") for p in params):
            return super().clip_grad_norm(max_norm, aggregate_norm_fn)
        grads = [p.grad for p in params]
        norms = torch._foreach_norm(grads, 2, dtype=torch.float32)
        total_norm = torch.linalg.vector_norm(torch.stack(norms))
        if aggregate_norm_fn is not None:
            total_norm = aggregate_norm_fn(total_norm)
        if max_norm > 0:
            clip_coef = (float(max_norm) / (total_norm + 1e-6)).clamp_(max=1)
            torch._foreach_mul_(grads, clip_coef)
        return total_norm


__all__ = ["VecoAdamW", "VecoAdamWConfig"]
