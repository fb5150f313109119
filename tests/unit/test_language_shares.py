"""Many languages: ``--mono-langs`` / ``--bi-pairs`` with twelve and eleven entries of
very different sizes (real gettext text, 300:1 between the largest and the smallest),
resampled per epoch with q_l ∝ p_l^α (``VecoPretrainingTask._mix``).

Counted from the batches fairseq-train iterates (``get_batch_iterator``'s batches of
epochs 1 and 2, one process): which language each item of each sub-batch comes from.

* One pass over a sub-dataset (its resampled epoch) holds ceil(q_l N) pairs of
  language l: q_l to one pair, and other pairs every epoch.
* Over a whole epoch, every update included: the sub-dataset with fewer batches
  cycles to fill the epoch's updates; its items beyond its whole passes, and the
  epoch's items, are within the bound of N items whose languages were drawn
  independently with probabilities q_l (binomial: |count - N q_l| <=
  Z sqrt(N q_l (1 - q_l)) + 1; Z = 4.5: p < 1e-3 for all 138 counts together, by
  Bonferroni).
"""

import functools

import numpy as np
import pytest
from fairseq import tasks

from tests.helpers.many_languages import build_many_languages
from tests.helpers.runner import USER_DIR, train_cfg

SIZES = [2400, 1200, 600, 320, 160, 90, 50, 30, 20, 14, 10, 8]
MONO = dict(zip("fr de es it ru ja ko el cs tr pl sv".split(), SIZES))
BI = dict(zip("fr de es it ru ja ko el cs tr pl".split(), SIZES[:11]))
ALPHA = 0.3
Z = 4.5
# (--mono-max-tokens, --bi-max-tokens): the monolingual, then the bilingual sub-batches
# the fewer, so that each of them cycles in one of the runs
CYCLING = {"mono": (1500, 1000), "bi": (600, 3000)}


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    path, mono, bi = build_many_languages(str(tmp_path_factory.mktemp("langs")), MONO, BI)
    assert list(mono.values()) == SIZES and list(bi.values()) == SIZES[:11]
    return path


@functools.lru_cache(maxsize=None)
def _epochs(data, cycling):
    """Per epoch (1, 2): per sub-dataset ("mono"/"bi"): (the languages' sizes in pairs,
    the pairs of each language in one pass, the items of each language over the
    epoch's batches, the underlying pairs the epoch drew per language)."""
    mono_tokens, bi_tokens = CYCLING[cycling]
    cfg = train_cfg(
        [data, "--user-dir", USER_DIR, "--task", "veco_pretraining"]
        + ["--mono-langs", ",".join(MONO), "--bi-pairs", ",".join(f"en-{x}" for x in BI)]
        + ["--multilang-sampling-alpha", str(ALPHA), "--arch", "veco_tiny"]
        + ["--criterion", "tlm", "--cpu", "--optimizer", "adam", "--max-tokens", "20000"]
        + ["--mono-max-tokens", str(mono_tokens), "--bi-max-tokens", str(bi_tokens)]
        + ["--max-mono-positions", "64", "--max-bi-positions", "64"]
    )
    task = tasks.setup_task(cfg.task)
    task.load_dataset("train", epoch=1)
    dataset = task.datasets["train"]
    out = {}
    for epoch in (1, 2):  # fairseq-train: one dataset, a batch iterator per epoch
        batches = task.get_batch_iterator(
            dataset, max_tokens=cfg.dataset.max_tokens, seed=cfg.common.seed, epoch=epoch
        ).frozen_batches
        out[epoch] = {}
        for key, part in dataset.datasets.items():
            start, ends = dataset.offsets[key], np.asarray(part.cumulative_sizes)
            items = np.concatenate([b[(b >= start) & (b < start + len(part))] for b in batches])
            language = np.searchsorted(ends, items - start, side="right")
            out[epoch][key] = (
                np.array([len(d.dataset) for d in part.datasets]),
                np.array([len(d) for d in part.datasets]),
                np.bincount(language, minlength=len(ends)),
                [np.sort(d._cur_indices.array) for d in part.datasets],
            )
    return out


def _q(sizes):
    q = (sizes / sizes.sum()) ** ALPHA
    return q / q.sum()


@pytest.mark.parametrize("cycling", list(CYCLING))
def test_one_pass_holds_q_of_each_language(data, cycling):
    epochs = _epochs(data, cycling)
    for key in ("mono", "bi"):
        (sizes, one, _, drawn1), (_, one2, _, drawn2) = epochs[1][key], epochs[2][key]
        q = _q(sizes)
        assert len(sizes) == (12 if key == "mono" else 11)
        assert sizes.max() / sizes.min() > 200
        assert np.all(np.abs(one - q * sizes.sum()) <= 1), (key, one, q * sizes.sum())
        assert np.array_equal(one, one2)
        # the draws change with the epoch: the largest language is downsampled (other
        # pairs), the smallest upsampled with replacement (other repeats)
        for lang in (0, len(sizes) - 1):
            assert not np.array_equal(drawn1[lang], drawn2[lang]), (key, lang)


def _within_sampling_error(counts, q):
    """|count_l - N q_l| <= Z sd + 1 for every l (N = Σ counts); else the z-scores."""
    n = counts.sum()
    sd = np.sqrt(n * q * (1 - q))
    assert np.all(np.abs(counts - n * q) <= Z * sd + 1), np.round((counts - n * q) / sd, 1)


@pytest.mark.parametrize("cycling", list(CYCLING))
def test_epoch_shares_are_q_within_sampling_error(data, cycling):
    for epoch, parts in _epochs(data, cycling).items():
        for key, (sizes, one, counts, _) in parts.items():
            q = _q(sizes)
            _within_sampling_error(counts, q)
            # beyond its whole passes, the cycling sub-dataset's items are a sample
            passes = counts.sum() // one.sum()
            assert passes >= (1 if key == cycling else 0)
            rest = counts - passes * one
            if key == cycling:
                assert rest.sum() > 500
                _within_sampling_error(rest, q)
