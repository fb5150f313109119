"""``--update-freq K`` is one update on the union of the K batches, for every objective.

fairseq's own ``Trainer`` (the one fairseq-train builds, fp32, dropout off, plain SGD
so that the update is the gradient itself) takes one step over K micro-batches of
unequal sizes (one without a bilingual sub-batch) with ``--update-freq K``, and another
``Trainer`` from the same initial weights one step over the collated union of the same
pairs with ``--update-freq 1``. fairseq sums the K gradients and divides by the summed
``sample_size``; the criterion sums its terms over tokens (a batch-free term such as
``align`` is scaled by ``sample_size``), so both steps are the same sum divided by the
same count. The union pads to other widths, which changes only the summation order of
fp32 reductions: the gradients agree to fp32 round-off (relative to each tensor's
largest), the updated parameters to that plus their own rounding.
"""

import pytest
import torch
from fairseq.trainer import Trainer

from tests.helpers.runner import USER_DIR, train_cfg
from tests.helpers.toy import diagonal_links, pair_dataset, toy_dictionary
from tests.helpers.word_list import toy_word_list
from veco_plugin.tasks.veco_pretraining import VecoPretrainingTask

MICRO = [(3, 2), (5, 4), (2, 0)]  # (mono pairs, bi pairs) of each micro-batch
ALL_TERMS = "mono_mlm=1,bi_mlm=1,mono_ca=1,bi_ca=1,bi_tlm=1,bi_dwa=1,bi_cp=1,align=10"
CRITERIA = {
    "ca_mlm": [],
    "tlm": [],
    "dwa": [],
    "align_mlm": ["--align-dictionary", "{words}"],
    "weam": [],
    "veco_terms": ["--terms", ALL_TERMS, "--align-dictionary", "{words}"],
}
RTOL = 1e-5  # of a tensor's largest gradient; measured: <= 4.2e-7 (fp32 round-off)
ZERO = 1e-2  # a tensor whose gradient is below ZERO x the model's largest is ~zero
# (the keys' biases: attention is shift-invariant along a query's scores, so their
# gradients are round-off around 0, ~1e-10, and 100% apart in relative terms)


def _trainer(criterion, update_freq, words):
    flags = [f.format(words=words) for f in CRITERIA[criterion]]
    cfg = train_cfg(
        ["DATA", "--user-dir", USER_DIR, "--task", "veco_pretraining"]
        + ["--mono-langs", "en", "--bi-pairs", "en-de", "--arch", "veco_tiny"]
        + ["--max-mono-positions", "32", "--max-bi-positions", "32"]
        + ["--dropout", "0", "--attention-dropout", "0"]
        + ["--criterion", criterion, "--cpu", "--optimizer", "sgd", "--lr", "1"]
        + ["--lr-scheduler", "fixed", "--update-freq", str(update_freq), "--no-save"]
        + flags
    )
    task = VecoPretrainingTask(cfg.task, toy_dictionary())
    torch.manual_seed(0)
    model = task.build_model(cfg.model)
    return Trainer(cfg, task, model, task.build_criterion(cfg.criterion))


def _batch(dataset, indices):
    batch = dataset.collater([dataset[i] for i in indices])
    if "concat_tokens" in batch and len(indices):
        batch["links"] = diagonal_links(batch, many_to_one=True)
    return batch


def _samples():
    """The K micro-batches and their union: pairs of 4-12 tokens, so every batch pads
    to its own width."""
    d = toy_dictionary()
    n_mono, n_bi = (sum(m[k] for m in MICRO) for k in (0, 1))
    mono, bi = pair_dataset(d, n_mono, seed=0), pair_dataset(d, n_bi, seed=1)
    micro, start = [], [0, 0]
    for sizes in MICRO:
        sample = {}
        for k, (kind, dataset) in enumerate((("mono", mono), ("bi", bi))):
            if sizes[k]:
                sample[kind] = _batch(dataset, range(start[k], start[k] + sizes[k]))
            start[k] += sizes[k]
        micro.append(sample)
    union = {"mono": _batch(mono, range(n_mono)), "bi": _batch(bi, range(n_bi))}
    return micro, union


def update_differences(criterion, words):
    """Per parameter tensor (name -> ...): max |Δ| of the gradients fairseq applied / the
    tensor's largest gradient (floored at ``ZERO`` x the model's largest); max |Δ| of
    the updated parameters; the room the tolerance leaves them."""
    micro, union = _samples()
    params, grads = {}, {}
    for name, freq, samples in (("micro", len(micro), micro), ("union", 1, [union])):
        trainer = _trainer(criterion, freq, words)
        trainer.train_step(samples)
        if name == "union":  # every term of the recipe had something to score
            _, _, logged = trainer.criterion(trainer.model, union)
            counts = {k: v for k, v in logged.items() if k.endswith("_n")}
            assert counts and all(v > 0 for v in counts.values()), counts
        named = list(trainer.model.named_parameters())
        params[name] = {n: p.detach() for n, p in named}
        grads[name] = {n: p.grad for n, p in named if p.grad is not None}
    assert grads["micro"].keys() == grads["union"].keys()
    largest = max(g.abs().max().item() for g in grads["union"].values())
    out = {}
    for n, grad in grads["union"].items():
        scale = max(grad.abs().max().item(), ZERO * largest)
        diff = (grads["micro"][n] - grad).abs().max().item()
        step = (params["micro"][n] - params["union"][n]).abs().max().item()
        # lr 1: the updates differ by the gradients' difference, plus the rounding
        # of each parameter (1 ulp of fp32 each)
        room = RTOL * scale + 2.0**-22 * params["union"][n].abs().max().item()
        out[n] = (diff / scale, step, room)
    return out


@pytest.mark.parametrize("criterion", list(CRITERIA))
def test_update_freq_is_the_union(criterion, tmp_path):
    words = tmp_path / "words.tsv"
    toy_word_list(words)
    diffs = update_differences(criterion, str(words))
    assert len(diffs) > 20
    for name, (rel, step, room) in diffs.items():
        assert rel <= RTOL, (name, rel)
        assert step <= room, (name, step, room)
