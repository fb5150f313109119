"""``veco-init-nmt``'s library: a pre-trained ``veco`` (or XLM-R/RoBERTa) checkpoint -> a
``veco_transformer`` encoder-decoder checkpoint (paper §3.2, Figure 3).

- :mod:`.keymap`: the pure, explicit key map and :func:`init_nmt_state` (fails on missing
  and unexpected keys, reports what starts random and what is dropped);
- :mod:`.vocab`: the fine-tuning dictionary (``dict.txt`` or ``veco-reduce-vocab``'s map);
- :mod:`.writer`: builds the target model as fairseq-train does and writes the trainer
  checkpoint that ``fairseq-train --restore-file`` and ``fairseq-generate`` load.

The checkpoint's sizes and the ``veco_transformer_*`` arch that has them are checkpoint
knowledge (:mod:`veco_plugin.checkpoints.sizes`, also read by ``veco-xtreme``).

What the model itself needs (tied modules, the dictionary digest, layer counting) lives
with the model (``veco_plugin.models``).
"""

from .keymap import (
    InitReport,
    NmtInitError,
    init_nmt_state,
    nmt_module_map,
    parse_decoder_layers,
    source_kind,
)
from .vocab import TargetDictionary, target_dictionary
from .writer import InitOptions, write_init_checkpoint

__all__ = [
    "InitOptions",
    "InitReport",
    "NmtInitError",
    "TargetDictionary",
    "init_nmt_state",
    "nmt_module_map",
    "parse_decoder_layers",
    "source_kind",
    "target_dictionary",
    "write_init_checkpoint",
]
