"""What each shard holds: one counting pass over TEXT, written to ``DATA/prepare.json``.

Every corpus (a language, or a pair) is a sequence of kept segments, numbered in
document order. Its first ``valid_lines`` segments are the validation split (shard0
only); the rest is cut into ``shards`` contiguous ranges of equal size (within one
segment), so every corpus is in every shard in proportion::

    segments of a corpus:  [ valid | shard0 | shard1 | ... | shard<N-1> ]

``prepare.json`` is the contract between the steps (and between the processes of a job
array): the settings, and per corpus its documents, their sizes in bytes (a file that
changed since is an error) and kept segments, and the drop counts. A DATA prepared with
other settings is refused, not mixed.
"""

import json
import logging
import os
from dataclasses import asdict, dataclass, field
from typing import Callable, Dict, Iterator, List, Optional, Sequence, Tuple

from ..corpora.text import DropCounts, write_lines
from ..errors import VecoUserError
from .layout import Corpus, find_corpora
from .reading import document_segments

logger = logging.getLogger(__name__)

PLAN = "prepare.json"
VERSION = 1

# map(function, items) of the caller: in this process, or over a pool of workers
Mapper = Callable[[Callable, Sequence], Iterator]


@dataclass(frozen=True)
class Settings:
    """The flags that decide what DATA holds (a re-run must pass the same): each field is
    a flag of ``veco-prepare-pretraining``
    (:func:`veco_plugin.cli.config_flags.add_config_flags`)."""

    text: str = field(metadata={"help": "TEXT/mono/<lang>/*.txt, TEXT/bi/<src>-<tgt>/"})
    shards: int = field(default=1, metadata={"help": "number of shards"})
    valid_lines: int = field(
        default=1000,
        metadata={
            "help": "segments held out for validation per language and pair (shard0; 0: none)"
        },
    )
    vocab_size: int = field(default=32000, metadata={"help": "sentencepiece pieces"})
    spm_alpha: float = field(
        default=0.3,
        metadata={"help": "language sampling exponent of the sentencepiece sample (q ∝ p^α)"},
    )
    spm_sample_lines: int = field(
        default=10_000_000,
        metadata={"help": "lines of the sentencepiece training sample (at most; all languages)"},
    )
    seed: int = field(default=1, metadata={"help": "seed of the sentencepiece sample"})
    spm_model: Optional[str] = field(
        default=None,
        metadata={
            "help": "use this sentencepiece model (e.g. XLM-R's sentencepiece.bpe.model) "
            "instead of training one"
        },
    )
    dict: Optional[str] = field(
        default=None,
        metadata={"help": "with --spm-model: its fairseq dict.txt (default: made from it)"},
    )

    def differences(self, other: "Settings") -> List[str]:
        """``--flag MINE (now THEIRS)`` for each setting that ``other`` changes."""
        mine, theirs = asdict(self), asdict(other)
        return [
            f"--{key.replace('_', '-')} {mine[key]} (now {theirs[key]})"
            for key in mine
            if mine[key] != theirs[key]
        ]


@dataclass
class CorpusPlan:
    """One corpus as counted: documents, their sizes in bytes, kept segments each."""

    kind: str
    name: str
    langs: List[str]
    documents: List[List[str]]
    sizes: List[List[int]]
    kept: List[int]
    counts: Dict[str, int] = field(default_factory=dict)

    @property
    def where(self) -> str:
        return f"{self.kind}/{self.name}"

    @property
    def total(self) -> int:
        return sum(self.kept)

    def drop_counts(self) -> DropCounts:
        counts = DropCounts()
        counts.read, counts.kept = self.counts["read"], self.counts["kept"]
        counts.dropped = {k: v for k, v in self.counts.items() if k not in ("read", "kept")}
        return counts

    def train_range(self, shard: int, shards: int, valid: int) -> Tuple[int, int]:
        """Segments ``[start, stop)`` of the train split of ``shard``."""
        n = self.total - valid
        return valid + shard * n // shards, valid + (shard + 1) * n // shards

    def check_unchanged(self) -> None:
        for document, sizes in zip(self.documents, self.sizes):
            for path, size in zip(document, sizes):
                now = os.path.getsize(path) if os.path.isfile(path) else None
                if now != size:
                    state = "is gone" if now is None else f"has {now} bytes, not {size}"
                    raise VecoUserError(
                        f"{path} {state} since DATA/{PLAN} was written: the shards "
                        "must come from the same text; restore it, or prepare into a new --out"
                    )


@dataclass
class Plan:
    settings: Settings
    corpora: List[CorpusPlan]
    version: int = VERSION

    @property
    def mono_langs(self) -> List[str]:
        return [c.name for c in self.corpora if c.kind == "mono"]

    @property
    def bi_pairs(self) -> List[str]:
        return [c.name for c in self.corpora if c.kind == "bi"]

    def shard_segments(self, shard: int) -> int:
        """Segments binarized into ``shard`` (train, and in shard0 validation)."""
        s = self.settings
        ranges = [c.train_range(shard, s.shards, s.valid_lines) for c in self.corpora]
        n = sum(stop - start for start, stop in ranges)
        return n + (s.valid_lines * len(self.corpora) if shard == 0 else 0)

    def save(self, path: str) -> None:
        write_lines(path, [json.dumps(asdict(self), indent=1, ensure_ascii=False)])

    @classmethod
    def load(cls, path: str) -> "Plan":
        with open(path, encoding="utf-8") as f:
            raw = json.load(f)
        if raw.get("version") != VERSION:
            raise VecoUserError(f"{path}: written by another version; prepare into a new --out")
        return cls(
            settings=Settings(**raw["settings"]),
            corpora=[CorpusPlan(**c) for c in raw["corpora"]],
        )


def count_document(document: Sequence[str]) -> Dict[str, int]:
    """Read one document once: the drop counts of its segments (each line checked)."""
    counts = DropCounts()
    for _ in document_segments(document, counts):
        pass
    return counts.as_dict()


def _add(total: Dict[str, int], counts: Dict[str, int]) -> None:
    for key, n in counts.items():
        total[key] = total.get(key, 0) + n


def _check_sizes(plan: Plan) -> None:
    s = plan.settings
    for c in plan.corpora:
        if c.total < s.valid_lines + s.shards:
            unit = "lines" if c.kind == "mono" else "pairs"
            raise VecoUserError(
                f"{s.text}/{c.where}: {c.total} {unit} kept, too few for --valid-lines "
                f"{s.valid_lines} plus one per shard (--shards {s.shards}); lower those "
                "flags or add text"
            )


def count(settings: Settings, mapper: Mapper) -> Plan:
    """The plan of ``settings.text``: every document read once (over ``mapper``)."""
    corpora: List[Corpus] = find_corpora(settings.text)
    documents = [d for c in corpora for d in c.documents]
    logger.info(f"counting {len(documents)} documents of {len(corpora)} corpora")
    results = iter(list(mapper(count_document, documents)))
    plans = []
    for c in corpora:
        one = CorpusPlan(
            kind=c.kind,
            name=c.name,
            langs=list(c.langs),
            documents=[list(d) for d in c.documents],
            sizes=[[os.path.getsize(p) for p in d] for d in c.documents],
            kept=[],
        )
        for _ in c.documents:
            counts = next(results)
            one.kept.append(counts["kept"])
            _add(one.counts, counts)
        plans.append(one)
        unit = "lines" if c.kind == "mono" else "pairs"
        logger.info(f"{c.where}: {one.drop_counts().summary(unit)}")
    plan = Plan(settings=settings, corpora=plans)
    _check_sizes(plan)
    return plan


def check_same(found: Plan, settings: Settings, path: str) -> None:
    """``found`` (from ``path``) was made with ``settings`` from text that has not
    changed since."""
    differences = found.settings.differences(settings)
    if differences:
        raise VecoUserError(
            f"{path} was prepared with {', '.join(differences)}; pass the same flags, "
            "or prepare into a new --out"
        )
    for c in found.corpora:
        c.check_unchanged()
