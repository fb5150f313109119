"""Model flags that fairseq only asserts on, or that fail at the first batch, checked
before the model is built: one line naming the flag and the fix.

* ``--{encoder,decoder}-embed-dim`` not a multiple of ``--*-attention-heads``:
  ``MultiheadAttention`` asserts "embed_dim must be divisible by num_heads";
* ``--dropout`` / ``--attention-dropout`` / ``--activation-dropout`` /
  ``--pooler-dropout`` outside [0, 1]: ``F.dropout`` fails in the first forward
  (on some builds the process aborts);
* ``--language-embeddings`` below 0: ``nn.Embedding`` fails;
* ``--max-positions`` (``veco``) below the longest input the task makes: an index
  error inside the position embedding at the first long batch.
"""

from typing import Any, Sequence

from fairseq.utils import safe_getattr

from ..errors import VecoUserError

DROPOUTS = ("dropout", "attention_dropout", "activation_dropout", "pooler_dropout")


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def check_heads(args, side: str) -> None:
    """``--{side}-embed-dim`` is a positive multiple of ``--{side}-attention-heads``."""
    dim = safe_getattr(args, f"{side}_embed_dim")
    heads = safe_getattr(args, f"{side}_attention_heads")
    if dim is None or heads is None:
        return
    dim_flag, heads_flag = _flag(f"{side}_embed_dim"), _flag(f"{side}_attention_heads")
    if heads < 1 or dim < 1:
        raise VecoUserError(f"{dim_flag} {dim} / {heads_flag} {heads}: both must be >= 1")
    if dim % heads:
        below, above = dim - dim % heads, dim - dim % heads + heads
        raise VecoUserError(
            f"{dim_flag} {dim} is not divisible by {heads_flag} {heads}: each head gets "
            f"an equal share of the width; pick e.g. {dim_flag} {below or above} or {above}, "
            f"or a head count that divides {dim}"
        )


def check_model_flags(args, sides: Sequence[str], needed_positions: Any = None) -> None:
    """Widths vs heads of each of ``sides`` ("encoder", "decoder"), dropout rates, and
    ``--max-positions`` against the ``needed_positions`` of the task (an int; other
    values, e.g. a translation task's (source, target) pair, are not checked)."""
    for side in sides:
        check_heads(args, side)
    for name in DROPOUTS:
        p = safe_getattr(args, name)
        if p is not None and not 0.0 <= p <= 1.0:
            raise VecoUserError(f"{_flag(name)} {p}: a probability, must be in [0, 1]")
    languages = safe_getattr(args, "language_embeddings")
    if languages is not None and languages < 0:
        raise VecoUserError(f"--language-embeddings {languages}: a count of languages, >= 0")
    positions = safe_getattr(args, "max_positions")
    if isinstance(needed_positions, int) and positions is not None and positions < needed_positions:
        raise VecoUserError(
            f"--max-positions {positions} is below the {needed_positions} positions the task "
            "feeds the model: leave --max-positions out (it defaults to the task's), or "
            "shorten the task's inputs (--max-mono-positions, --max-bi-positions)"
        )
