"""Silence the warnings that fairseq's own calls raise on every run.

None is the user's to act on, and the plugin makes none of these calls:

* ``FutureWarning: `torch.cuda.amp.autocast(args...)` is deprecated`` -- raised (even on
  the CPU) by ``with torch.cuda.amp.autocast(...)`` in fairseq's
  ``FairseqTask.train_step`` (``fairseq/tasks/fairseq_task.py``), which every task's
  ``train_step`` reaches through ``super()``; attributed to that fairseq module.
* ``UserWarning: Support for mismatched key_padding_mask and attn_mask is deprecated`` --
  raised by ``torch.nn.functional.multi_head_attention_forward`` (attributed to
  ``torch.nn.functional``) when fairseq's ``MultiheadAttention`` passes a decoder's float
  future mask (``TransformerDecoder.buffered_future_mask``) with its boolean padding mask.
* six hydra deprecations (``hydra.experimental.initialize()``/``compose()`` are no longer
  experimental, no ``version_base``, the ``# @package _group_`` header, schema matching,
  the ``strict`` flag) -- fairseq's ``convert_namespace_to_omegaconf`` and its config
  files use hydra 1.0's API; each attributed to the hydra module that raises it, but the
  schema one: hydra's fixed stack level lands in whatever called fairseq's configuration
  (``sys`` when the stack is shorter, as in fairseq-train; ``threading`` in a thread, as
  ``veco-xtreme``'s stages parse their commands; the caller's module otherwise), so it
  is matched by its message alone (hydra's own words: no other code raises it).
* ``UserWarning: 'pin_memory' argument is set as true but no accelerator is found`` --
  fairseq's ``EpochBatchIterator`` always asks for pinned memory; attributed to
  ``torch.utils.data.dataloader``.
* ``FutureWarning: `broadcast_buffers` is deprecated`` (torch 2.13), once per rank under
  torchrun -- fairseq's ``DistributedFairseqModel`` passes its ``--broadcast-buffers``
  setting to torch's DDP; torch's stack level puts it on the plugin's DDP class
  (``veco_plugin.distributed.cpu_ddp``), which passes fairseq's arguments on as given (the
  argument torch suggests instead still syncs buffers at start, which fairseq's default
  does not).

Each filter matches the message *and* the module the warning is attributed to (but the
one above), so any other warning from those modules, and the same warning raised by other
code (the plugin's own, for one), still shows.
"""

import warnings

# (message regex, category, module regex), matched as Python's warning filters match:
# the message from its start, case-insensitively
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
    (
        r"hydra\.experimental\.initialize\(\) is no longer experimental",
        UserWarning,
        r"hydra\.experimental\.initialize\Z",
    ),
    (
        r"\s*The version_base parameter is not specified",
        UserWarning,
        r"hydra\.experimental\.initialize\Z",
    ),
    (
        r"hydra\.experimental\.compose\(\) is no longer experimental",
        UserWarning,
        r"hydra\.experimental\.compose\Z",
    ),
    (
        r"In '[^']*': Usage of deprecated keyword in package header '# @package _group_'",
        UserWarning,
        r"hydra\.core\.default_element\Z",
    ),
    (
        r"\s*'config' is validated against ConfigStore schema with the same name",
        UserWarning,
        r"",  # any module: see the docstring
    ),
    (
        r"\s*The strict flag in the compose API is deprecated",
        UserWarning,
        r"hydra\.compose\Z",
    ),
    (
        r"'pin_memory' argument is set as true but no accelerator is found",
        UserWarning,
        r"torch\.utils\.data\.dataloader\Z",
    ),
    (
        r"`broadcast_buffers` is deprecated",
        FutureWarning,
        r"veco_plugin\.distributed\.cpu_ddp\Z",
    ),
)


def install() -> None:
    """Add the filters at the front of ``warnings.filters``; idempotent (the warnings
    module replaces an identical filter instead of adding a second)."""
    for message, category, module in _FAIRSEQ_CALLS:
        warnings.filterwarnings("ignore", message=message, category=category, module=module)
