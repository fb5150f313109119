"""Silence two torch deprecation warnings that fairseq's own calls raise on every run.

Neither is the user's to act on, and the plugin makes neither call:

* ``FutureWarning: `torch.cuda.amp.autocast(args...)` is deprecated`` -- raised (even on
  the CPU) by ``with torch.cuda.amp.autocast(...)`` in fairseq's
  ``FairseqTask.train_step`` (``fairseq/tasks/fairseq_task.py``), which every task's
  ``train_step`` reaches through ``super()``; attributed to that fairseq module.
* ``UserWarning: Support for mismatched key_padding_mask and attn_mask is deprecated`` --
  raised by ``torch.nn.functional.multi_head_attention_forward`` (attributed to
  ``torch.nn.functional``) when fairseq's ``MultiheadAttention`` passes a decoder's float
  future mask (``TransformerDecoder.buffered_future_mask``) with its boolean padding mask.

Each filter matches the message *and* the module the warning is attributed to, so any
other warning from those modules, and the same deprecation raised by other code (the
plugin's own, for one), still shows.
"""

import warnings

# (message regex, category, module regex), matched as Python's warning filters match
_FAIRSEQ_CALLS = (
    (
        r"`torch\.cuda\.amp\.autocast\(args\.\.\.\)` is deprecated",
        FutureWarning,
        r"fairseq\.tasks\.fairseq_task\Z",
    ),
    (
        r"Support for mismatched key_padding_mask and attn_mask is deprecated",
        UserWarning,
        r"torch\.nn\.functional\Z",
    ),
)


def install() -> None:
    """Add the filters at the front of ``warnings.filters``; idempotent (the warnings
    module replaces an identical filter instead of adding a second)."""
    for message, category, module in _FAIRSEQ_CALLS:
        warnings.filterwarnings("ignore", message=message, category=category, module=module)
