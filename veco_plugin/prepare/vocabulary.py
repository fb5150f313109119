"""The joint sentencepiece model and ``dict.txt`` of all shards.

The model trains on a language-balanced sample of the text (XLM-R / VECO): language l
holds n_l kept lines (its monolingual text and its side of every pair), p_l = n_l / Σn,
and gets a share q_l = p_l^α / Σ p^α (``--spm-alpha``; 1 keeps the corpus shares, 0
makes them equal) of a sample of S = min(``--spm-sample-lines``, Σn) lines. Each line
of l is drawn r_l = S q_l / n_l times in expectation (⌊r⌋ copies, one more with
probability r - ⌊r⌋): low-resource languages are repeated, large ones thinned. The
sample is streamed to files and sentencepiece reads at most S lines: memory follows S,
not the corpus.
"""

import logging
import os
import random
import shutil
from typing import Dict, List, Tuple

import sentencepiece

from ..corpora import subwords
from ..corpora.text import write_lines
from ..errors import VecoUserError
from .plan import Mapper, Plan
from .reading import lines

logger = logging.getLogger(__name__)

# one side of one document: (path, draws per line, output file, seed)
SampleJob = Tuple[str, float, str, str]


def language_lines(plan: Plan) -> Dict[str, int]:
    """n_l: kept lines of each language, monolingual and paired."""
    n: Dict[str, int] = {}
    for c in plan.corpora:
        for lang in c.langs:
            n[lang] = n.get(lang, 0) + c.total
    return n


def draws_per_line(n: Dict[str, int], alpha: float, cap: int) -> Dict[str, float]:
    """r_l: how often each line of language l is drawn (expected)."""
    total = sum(n.values())
    weights = {lang: (k / total) ** alpha for lang, k in n.items()}
    norm = sum(weights.values())
    size = min(cap, total)
    return {lang: size * weights[lang] / norm / n[lang] for lang in n}


def sample_file(job: SampleJob) -> int:
    """Write the draws of one file to its output; the number of lines written."""
    path, rate, out, seed = job
    rng, whole, part = random.Random(seed), int(rate), rate - int(rate)
    written = [0]

    def drawn():
        for line in lines(path):
            if line:
                copies = whole + (rng.random() < part)
                written[0] += copies
                yield from [line] * copies

    write_lines(out, drawn())
    return written[0]


def sample_jobs(plan: Plan, folder: str) -> List[SampleJob]:
    rates = draws_per_line(
        language_lines(plan), plan.settings.spm_alpha, plan.settings.spm_sample_lines
    )
    jobs = []
    for c in plan.corpora:
        for d, document in enumerate(c.documents):
            for lang, path in zip(c.langs, document):
                out = os.path.join(folder, f"{c.kind}.{c.name}.{d}.{lang}.txt")
                jobs.append((path, rates[lang], out, f"{plan.settings.seed}:{path}"))
    return jobs


def train(plan: Plan, data: str, mapper: Mapper, threads: int) -> None:
    """``data/spm.model`` and ``data/dict.txt``: trained on the sample, or the given
    ``--spm-model`` (and ``--dict``, else the dictionary of that model)."""
    s = plan.settings
    model, dictionary = os.path.join(data, "spm.model"), os.path.join(data, "dict.txt")
    if s.spm_model:
        subwords.load_sentencepiece(s.spm_model)
        shutil.copyfile(s.spm_model, model + ".part")
        os.replace(model + ".part", model)
    else:
        folder = os.path.join(data, ".spm-sample")
        shutil.rmtree(folder, ignore_errors=True)
        os.makedirs(folder)
        try:
            jobs = sample_jobs(plan, folder)
            drawn = sum(mapper(sample_file, jobs))
            logger.info(
                f"training a joint sentencepiece model ({s.vocab_size} pieces) on "
                f"{drawn} sampled lines (--spm-alpha {s.spm_alpha})"
            )
            prefix = os.path.join(folder, "spm")
            # the same model from the same flags: a seeded trainer, threads from --threads
            # only (the model depends on them), not from --workers
            sentencepiece.set_random_generator_seed(s.seed)
            subwords.train_sentencepiece(
                [j[2] for j in jobs],
                prefix,
                s.vocab_size,
                input_sentence_size=max(drawn, 1),
                num_threads=threads,
            )
            os.replace(prefix + ".model", model)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
    if s.dict:
        _copy_dictionary(s.dict, dictionary)
    else:
        subwords.write_dictionary(model, dictionary)
    with open(dictionary, encoding="utf-8") as f:
        logger.info(f"{model}, {dictionary} ({sum(1 for _ in f)} types) written")


def _copy_dictionary(src: str, dst: str) -> None:
    from fairseq.data import Dictionary

    try:
        Dictionary.load(src)
    except (OSError, ValueError, RuntimeError) as exc:
        raise VecoUserError(f"--dict {src}: not a fairseq dictionary ({exc})") from None
    with open(src, encoding="utf-8") as f:
        write_lines(dst, (line.rstrip("\n") for line in f))
