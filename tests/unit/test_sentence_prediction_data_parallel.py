"""``veco_sentence_prediction`` under fairseq's data-parallel wrappers, plug-out and plug-in.

Two gloo ranks on CPU (``tests/helpers/sentence_ddp_worker.py``, launched once for the
module), different examples per rank (plug-in: with their translations, collated by
``VecoTranslatedDataset``): after backward and the wrapper's all-reduce the gradients are
equal across ranks and, times the world size, equal to one process's gradients on the
union of the examples (the wrappers average over ranks; the criterion sums over rows).

The classifier never uses its LM head (nor, plug-out, the cross-attention): torch's DDP
needs ``find_unused_parameters`` and crashes at the second update without it, so the
task refuses that setting up front, in one line naming the flag.
"""

import sys

import pytest
import torch
from fairseq import options
from fairseq.dataclass.utils import convert_namespace_to_omegaconf

from tests.helpers.runner import start
from tests.helpers.sentence_ddp_worker import (
    BACKENDS,
    EXAMPLES_PER_RANK,
    MODES,
    batch,
    classifier,
    criterion,
)
from tests.helpers.toy import toy_dictionary
from tests.unit.test_data_parallel import REPO, WORLD, _free_port
from veco_plugin.errors import VecoUserError
from veco_plugin.tasks.veco_sentence_prediction import VecoSentencePredictionTask

# The ranks' batches and the union batch are padded to different widths and summed in a
# different order, so float32 results differ in their last bits, a few ulps of the
# largest gradient (measured: 1.7e-6 plug-out, 9.5e-7 plug-in, on token embeddings, of
# largest gradients 10.2 and 13.4, i.e. 1.6e-7 and 7e-8 of them). Gradients that are
# exactly zero in exact arithmetic (k_proj biases) come out as float noise, so the bound
# is absolute, not relative to each element.
TOLERANCE = 1e-6  # of the largest gradient


@pytest.fixture(scope="module")
def ranks(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("sentence_ddp")
    port = _free_port()
    out = [tmp / f"rank{r}.pt" for r in range(WORLD)]
    argv = [sys.executable, "-m", "tests.helpers.sentence_ddp_worker"]
    procs = [start([*argv, r, WORLD, port, out[r]], cwd=REPO) for r in range(WORLD)]
    for p in procs:
        log = p.communicate(timeout=240)[0].decode(errors="replace")
        assert p.returncode == 0, log[-3000:]
    return [torch.load(path) for path in out]


def union_gradients(mode):
    """One process, no wrapper, every rank's examples in one batch."""
    d = toy_dictionary()
    model = classifier(d, plug_in=mode == "in")
    loss, _, _ = criterion()(model, batch(d, mode == "in", 0, WORLD * EXAMPLES_PER_RANK))
    loss.backward()
    return {n: p.grad for n, p in model.named_parameters() if p.grad is not None}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("mode", MODES)
def test_two_ranks_equal_one_process_on_the_union(ranks, mode, backend):
    first, second = (r["grads"][backend, mode] for r in ranks)
    union = union_gradients(mode)
    assert first.keys() == second.keys()
    assert set(union) <= set(first)
    atol = TOLERANCE * max(g.abs().max().item() for g in union.values())
    for name, grad in first.items():
        torch.testing.assert_close(second[name], grad, rtol=0, atol=0, msg=name)
        expected = union.get(name, torch.zeros_like(grad))
        torch.testing.assert_close(WORLD * grad, expected, rtol=0, atol=atol, msg=name)
    assert "classification_heads.sentence_classification_head.dense.weight" in union
    assert not [n for n in union if ".lm_head." in n]  # what find_unused_parameters is for
    cross = [n for n in union if ".cross_attn." in n]
    assert bool(cross) == (mode == "in")  # plug-in trains the cross-attention, plug-out not


@pytest.mark.parametrize("mode", MODES)
def test_pytorch_ddp_without_find_unused_parameters_crashes_at_the_second_step(ranks, mode):
    """Why the task refuses it: torch raises only after the first update."""
    for r in ranks:
        assert "find_unused_parameters=True" in r["errors"][mode]


def fairseq_train_task(*flags):
    """The task as fairseq-train builds it from ``flags`` (toy dictionaries, no data)."""
    parser = options.get_training_parser()
    args = options.parse_args_and_arch(
        parser,
        ["DATA", "--task", "veco_sentence_prediction", "--criterion", "veco_sentence_prediction"]
        + ["--arch", "veco_tiny", "--num-classes", "3", *flags],
    )
    cfg = convert_namespace_to_omegaconf(args)
    return VecoSentencePredictionTask(cfg.task, toy_dictionary(), toy_dictionary(3)), cfg


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("backend", ["pytorch_ddp", "c10d"])
def test_ddp_without_find_unused_parameters_is_refused_up_front(mode, backend):
    task, cfg = fairseq_train_task(
        "--plug-mode", mode, "--distributed-world-size", "2", "--ddp-backend", backend
    )
    with pytest.raises(VecoUserError) as error:
        task.build_criterion(cfg.criterion)
    message = str(error.value)
    assert "\n" not in message
    assert message.startswith("--task veco_sentence_prediction leaves the LM head")
    assert message.endswith("add --find-unused-parameters (or use legacy_ddp)")
    assert ("cross-attention" in message) == (mode == "out")


@pytest.mark.parametrize(
    "flags",
    [
        ["--distributed-world-size", "2", "--find-unused-parameters"],
        ["--distributed-world-size", "2", "--ddp-backend", "legacy_ddp"],
        ["--distributed-world-size", "1"],
    ],
)
def test_settings_that_train_are_accepted(flags):
    task, cfg = fairseq_train_task("--plug-mode", "in", *flags)
    task.build_criterion(cfg.criterion)
