"""The table of pre-training objectives: one row per registered criterion.

The quickstart (which runs to train, its labels, what starts from what), its report,
the benchmarks (which variants to time) and the tests read this table; adding an
objective is its criterion module plus one row here. A row that needs more than the
text (a word list, word alignments) or flags beyond ``--criterion`` says so here too
(``needs``, ``train_flags``), so that no reader special-cases a criterion's name.
"""

import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Tuple

from fairseq.criterions import CRITERION_DATACLASS_REGISTRY, CRITERION_REGISTRY
from fairseq.dataclass.utils import merge_with_parent
from omegaconf import OmegaConf

BenchmarkVariant = Tuple[str, Mapping[str, Any]]

WORD_LIST = "word_list"
"""The row needs an English-X bilingual word list: ``{word_list}/train.txt`` (trained
on) and ``{word_list}/heldout.txt`` (scored), MUSE ``src tgt`` lines, as
``veco-gettext-dictionary --tgt-lang X --output {word_list}`` writes them (either file
may also be a resolved ``align_dictionary.tsv``)."""
WORD_ALIGNMENTS = "word_alignments"
"""The row needs word alignments binarized with the bitext
(``DATA/bi/<pair>/<split>.align.<pair>.{bin,idx}``: ``scripts/prepare-pretraining-data.sh
--align-with eflomal``), which its bilingual batches carry as ``links`` (B, W, W)."""
NEEDS = (WORD_LIST, WORD_ALIGNMENTS)
"""Everything a row can need beyond the monolingual and bilingual text; the
placeholders ``train_flags`` may use are the names of those that are paths."""
PATH_NEEDS = (WORD_LIST,)

_PLACEHOLDER = re.compile(r"\{(\w+)\}")


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
    quickstart_opt_in: bool = False
    """the quickstart runs the row only when asked with ``--<run>`` (off by default)."""
    note: str = ""
    """a caveat the quickstart report prints under its table as "<label> row: <note>"
    when the row is in the table."""
    needs: Tuple[str, ...] = ()
    """data beyond the text (:data:`NEEDS`): the quickstart makes it before pre-training,
    the benchmark generates it."""
    train_flags: Tuple[str, ...] = ()
    """fairseq-train flags appended to the common pre-training command (criterion and
    task settings); ``{word_list}`` stands for the directory of the row's word list."""

    def train_args(self, **paths: str) -> List[str]:
        """``train_flags`` with the placeholders replaced by ``paths`` (``word_list=DIR``);
        a placeholder without a path is a KeyError naming it."""
        return [_fill(flag, paths, self.criterion) for flag in self.train_flags]

    def criterion_settings(self, **paths: str) -> Dict[str, Any]:
        """The ``train_flags`` that set fields of the criterion's config, as settings for
        :func:`build_criterion` (``--align-dictionary F`` -> ``{"align_dictionary": F}``;
        a flag without a value is True); task flags (``--bi-mask-prob``) are left out."""
        fields = CRITERION_DATACLASS_REGISTRY[self.criterion].__dataclass_fields__
        args, settings = self.train_args(**paths), {}
        for i, flag in enumerate(args):
            name = flag[2:].replace("-", "_")
            if not flag.startswith("--") or name not in fields:
                continue
            value = args[i + 1] if i + 1 < len(args) and not args[i + 1].startswith("--") else True
            settings[name] = value
        return settings


def _fill(flag: str, paths: Mapping[str, str], criterion: str) -> str:
    def path(match: "re.Match[str]") -> str:
        if match.group(1) not in paths:
            raise KeyError(f"{criterion}'s train_flags need the path {{{match.group(1)}}}")
        return paths[match.group(1)]

    return _PLACEHOLDER.sub(path, flag)


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
    Objective(
        "align_mlm",
        "ALIGN-MLM (align_mlm: MLM + 10·L_ALIGN)",
        run="alignmlm",
        benchmark=(("align_mlm", {}),),
        quickstart_switch=True,
        note="the quickstart gives every pre-training the bitext, so align_mlm also trains "
        "TLM on the bilingual batches (the paper: monolingual text only); its word list is "
        "veco-gettext-dictionary's, the alignment score is on its held-out words; like tlm it "
        "never runs the cross-attention (random weights in the decoder's encoder-attention)",
        needs=(WORD_LIST,),
        train_flags=(
            "--align-dictionary", "{word_list}/train.txt",
            "--align-heldout", "{word_list}/heldout.txt",
        ),  # fmt: skip
    ),
    Objective(
        "weam",
        "WEAM (weam: TLM + cross-lingual prediction)",
        run="weam",
        benchmark=(("weam", {}),),
        quickstart_switch=True,
        note="weam never runs the cross-attention, so veco-init-nmt copies untrained "
        "(randomly initialized) weights into the decoder's encoder-attention, as for tlm",
        needs=(WORD_ALIGNMENTS,),
        train_flags=("--bi-mask-prob", "0.3"),  # the paper masks 30% of the pair
    ),
    Objective(
        "dict_mlm",
        "DICT-MLM (dict_mlm: MLM, inputs 50% code-switched by the dictionary)",
        run="dictmlm",
        quickstart_opt_in=True,
        note="the quickstart gives every pre-training the bitext, so dict_mlm also trains "
        "TLM on the bilingual batches (the paper: monolingual text only); its dictionary is "
        "the single-piece entries of veco-gettext-dictionary's word list; like tlm it never "
        "runs the cross-attention (random weights in the decoder's encoder-attention)",
        needs=(WORD_LIST,),
        train_flags=("--align-dictionary", "{word_list}/train.txt"),
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


def benchmark_variants(**paths: str) -> Dict[str, Tuple[str, Mapping[str, Any]]]:
    """Every benchmark variant of the table: name -> (criterion, settings): the row's
    criterion settings from ``train_flags`` (placeholders filled from ``paths``, e.g.
    ``word_list=DIR``), then the variant's own."""
    return {
        name: (row.criterion, {**row.criterion_settings(**paths), **s})
        for row in OBJECTIVES
        for name, s in row.benchmark
    }
