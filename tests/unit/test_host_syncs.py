"""No host synchronisation in the plugin's training step.

On CPU, during one step (forward and backward) of each objective:

* every call of ``Tensor.item``, ``.cpu``, ``.tolist``, ``.numpy``, ``bool()``,
  ``int()``, ``float()`` made directly by ``veco_plugin`` code is recorded: none;
* every op whose result size depends on the data (``nonzero``, ``masked_select``,
  boolean-mask indexing, ``item``), which must wait for the device on CUDA, is
  recorded with the innermost ``veco_plugin``/fairseq line that issued it: none at all.
  fairseq's RoBERTa LM head would index the masked positions with a boolean mask (one
  wait per call, as in fairseq's own ``masked_lm``): the plugin hands it the rows,
  gathered by the collater's counts (``pair_masked``, ``concat_masked``), which change
  no loss and no gradient.

Logging: fairseq's Trainer reduces and rounds the logged metrics every update, so every
logged value reaches the host every update; the criteria bring them in one transfer.
Over a whole ``Trainer.train_step`` (fairseq's own syncs listed):
``benchmarks/trainer_speed.py`` and tests/integration/test_benchmarks_smoke.py.

With CUDA, the step also runs under ``torch.cuda.set_sync_debug_mode``: no
synchronizing CUDA operation may be issued from a ``veco_plugin`` source line.
"""

import math
import os
import sys
import traceback
import warnings
from collections import Counter

import pytest
import torch

from tests.helpers.toy import build, diagonal_links, pair_batch, toy_dictionary
from tests.helpers.word_list import table_criterion
from veco_plugin.objectives import WORD_ALIGNMENTS, objective

BENCHMARKS = os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks")
sys.path.insert(0, os.path.abspath(BENCHMARKS))
from sync_count import HostWaits, innermost  # noqa: E402

PLUGIN = os.path.join("veco_plugin", "")
SYNCING = ("item", "cpu", "tolist", "numpy", "__bool__", "__int__", "__float__")
CRITERIA = ("ca_mlm", "tlm", "dwa", "align_mlm", "weam", "dict_mlm", "dict_mlm:synonym_target")
"""criteria with their table settings; ``name:mode``: with ``--dict-mlm-mode mode``."""


def parts(name, tmp_path, device="cpu"):
    """``name``'s criterion, a toy model fitted to it and a sample of both sub-batches."""
    d = toy_dictionary()
    name, _, mode = name.partition(":")
    criterion = table_criterion(name, d, tmp_path, **({"dict_mlm_mode": mode} if mode else {}))
    model = build("veco_tiny", d, dropout=0.1, attention_dropout=0.1)
    criterion.extend_model(model)
    model.to(device).train()
    sample = {"mono": pair_batch(d, seed=0), "bi": pair_batch(d, seed=1)}
    if WORD_ALIGNMENTS in objective(name).needs:
        sample["bi"]["links"] = diagonal_links(sample["bi"])
    sample = {k: {f: v.to(device) if torch.is_tensor(v) else v for f, v in b.items()}
              for k, b in sample.items()}  # fmt: skip
    return criterion, model, sample


def step(name, tmp_path, device="cpu"):
    """A function running one training step (forward + backward) of ``name``."""
    criterion, model, sample = parts(name, tmp_path, device)

    def run():
        loss, _, _ = criterion(model, sample)
        loss.backward()

    return run


class SyncRecorder:
    """Patches ``SYNCING`` on ``torch.Tensor`` to count the plugin lines calling them."""

    def __init__(self):
        self.calls = Counter()
        self.saved = {}

    def __enter__(self):
        for name in SYNCING:
            original = getattr(torch.Tensor, name)
            self.saved[name] = original
            setattr(torch.Tensor, name, self._recording(name, original))
        return self

    def __exit__(self, *exc):
        for name, original in self.saved.items():
            setattr(torch.Tensor, name, original)

    def _recording(self, name, original):
        calls = self.calls

        def recorded(tensor, *args, **kwargs):
            caller = sys._getframe(1)
            if PLUGIN in caller.f_code.co_filename:
                calls[f"{caller.f_code.co_filename}:{caller.f_lineno} {name}"] += 1
            return original(tensor, *args, **kwargs)

        return recorded


def test_the_recorder_sees_plugin_calls():
    with SyncRecorder() as recorder:
        from veco_plugin.terms.scores import logged_total

        logged_total([{"n": torch.tensor(2)}], "n")  # a logging-time .item()
        bool(torch.tensor(True))  # this file is not plugin code
    assert [k.rsplit(" ", 1)[1] for k in recorder.calls] == ["item"]


def test_the_dispatch_guard_sees_boolean_indexing():
    from veco_plugin.modules.pair_layout import split_pair

    values = torch.arange(6).view(1, 6)
    with HostWaits() as ops:
        split_pair(values, torch.tensor([3]), 3)  # gather: no data-dependent size
        values[values > 2]
    assert list(ops.calls.values()) == [1] and not ops.plugin_calls()


@pytest.mark.parametrize("name", CRITERIA)
def test_no_data_dependent_op_from_plugin_code(name, tmp_path):
    run = step(name, tmp_path)
    run()
    with HostWaits() as ops:
        run()
    assert not ops.calls, dict(ops.calls)  # fairseq's LM head's neither: it gets the rows


@pytest.mark.parametrize("name", CRITERIA)
def test_the_collaters_counts_change_no_loss_nor_gradient(name, tmp_path):
    """With the counts the LM head's rows are gathered; without them (a batch made
    elsewhere) fairseq's head indexes by the mask: the same rows, then the same operators
    on the same shapes, so the same loss and gradients, bit for bit. The sample size is
    then a Python int (fairseq's Trainer reads it on the host), the same number."""
    criterion, model, sample = parts(name, tmp_path)
    uncounted = {k: {f: v for f, v in b.items() if not f.endswith("_masked")}
                 for k, b in sample.items()}  # fmt: skip
    assert uncounted != sample
    results = []
    for batch in (sample, uncounted):
        model.zero_grad()
        torch.manual_seed(0)  # the same dropout and draws
        loss, sample_size, _ = criterion(model, batch)
        loss.backward()
        grads = [p.grad.clone() for p in model.parameters() if p.grad is not None]
        results.append((loss.detach(), grads, sample_size))
    (loss, grads, size), (loss_b, grads_b, size_b) = results
    assert type(size) is int and size == size_b.item()
    assert torch.equal(loss, loss_b) and len(grads) == len(grads_b)
    assert all(torch.equal(a, b) for a, b in zip(grads, grads_b))


@pytest.mark.parametrize("name", CRITERIA)
def test_no_host_sync_in_the_plugin_step(name, tmp_path):
    run = step(name, tmp_path)
    run()  # first step: lazy set-up (layer resolution, word lists) is not the step
    with SyncRecorder() as recorder:
        run()
    assert not recorder.calls, dict(recorder.calls)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("name", CRITERIA)
def test_no_synchronizing_cuda_op_from_plugin_code(name, tmp_path):
    """``set_sync_debug_mode("warn")`` (not "error": fairseq's LM head syncs once per
    call, see the module docstring), each warning attributed to the innermost
    plugin/fairseq line on the stack."""
    run = step(name, tmp_path, device="cuda")
    run()
    torch.cuda.synchronize()
    sites = Counter()
    with warnings.catch_warnings():
        warnings.simplefilter("always")

        def record(message, *args, **kwargs):
            if "synchronizing" in str(message):  # "called a synchronizing CUDA operation"
                sites.update([innermost(traceback.extract_stack())])

        warnings.showwarning = record
        torch.cuda.set_sync_debug_mode("warn")
        try:
            run()
        finally:
            torch.cuda.set_sync_debug_mode("default")
    assert not {k: n for k, n in sites.items() if PLUGIN in k}, sites


@pytest.mark.parametrize("name", ["ca_mlm", "tlm", "dict_mlm"])
def test_a_batch_without_pad_runs_without_a_mask_and_computes_the_same(name, tmp_path, monkeypatch):
    """One pair of one sentence a side: no pad in either layout, which the collater says
    (``pair_padded``, ``concat_padded``: False), so no attention mask is built; the loss
    and gradients are those of the masked path (fp32; the kernels may differ)."""
    criterion, model, sample = parts(name, tmp_path)
    d = toy_dictionary()
    sample = {"mono": pair_batch(d, n_pairs=1, seed=0), "bi": pair_batch(d, n_pairs=1, seed=1)}
    assert not any(b[k] for b in sample.values() for k in ("pair_padded", "concat_padded"))
    masked = {k: {**b, "pair_padded": True, "concat_padded": True} for k, b in sample.items()}
    sdpa, masks = torch.nn.functional.scaled_dot_product_attention, []

    def seen(*args, attn_mask=None, **kwargs):  # torch's, recording whether it got a mask
        masks.append(attn_mask is not None)
        return sdpa(*args, attn_mask=attn_mask, **kwargs)

    monkeypatch.setattr(torch.nn.functional, "scaled_dot_product_attention", seen)
    results = []
    for batch in (sample, masked):
        model.zero_grad()
        torch.manual_seed(0)
        masks.clear()
        loss, _, _ = criterion(model, batch)
        assert masks and all(masks) == (batch is masked) and any(masks) == (batch is masked)
        loss.backward()
        results.append(
            (loss.detach(), [p.grad.clone() for p in model.parameters() if p.grad is not None])
        )
    (loss, grads), (loss_m, grads_m) = results
    torch.testing.assert_close(loss, loss_m, rtol=1e-5, atol=1e-6)
    assert len(grads) == len(grads_m)
    for a, b in zip(grads, grads_m):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("name", ["ca_mlm", "dwa", "align_mlm", "dict_mlm"])
def test_the_logged_values_reach_the_host_in_one_transfer(name, tmp_path):
    """fairseq's Trainer reduces and rounds the logged metrics every update, so each value
    reaches the host every update: the criterion brings them all in one transfer (one wait
    on a GPU; a ``.item()`` per key waited 27 times per ``ca_mlm`` update), the same
    numbers as summing each key alone."""
    from fairseq.logging import metrics

    criterion, model, sample = parts(name, tmp_path)
    logs = [criterion(model, sample)[2] for _ in range(2)]  # two workers' outputs
    with SyncRecorder() as recorder, metrics.aggregate() as agg:
        type(criterion).reduce_metrics(logs)
    assert list(recorder.calls.values()) == [1], dict(recorder.calls)
    assert next(iter(recorder.calls)).split(" ")[-1] == "tolist"
    logged = agg.get_smoothed_values()

    def total(key):
        return sum(float(log.get(key, 0)) for log in logs)

    want = {"loss": total("loss") / total("sample_size") / math.log(2)}
    for key in (k[: -len("_loss")] for k in logs[0] if k.endswith("_loss")):
        if total(f"{key}_n"):
            want[f"{key}_loss"] = total(f"{key}_loss") / total(f"{key}_n") / math.log(2)
            want[f"{key}_acc"] = 100 * total(f"{key}_correct") / total(f"{key}_n")
    assert len(want) > 3 and set(want) <= set(logged)
    for key, value in want.items():  # fairseq rounds losses to 3 digits, accuracies to 2
        assert logged[key] == pytest.approx(value, abs=6e-3), key
