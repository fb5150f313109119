"""The parts an objective adds to the model (XLM-Align's pointer network, WEAM's exchange
head) come from the model's own args, as ``veco_pretraining`` builds the model to train:
present before any criterion, optimizer or data-parallel wrapper exists; the same parts
the criterion's terms name (``criterion.extensions``); none for a model a tool reads from
a checkpoint (``from_checkpoint``).

The task is set up from the toy command line (``tests.helpers.runner.pretrain_args``) on a
DATA holding only the frozen ``veco_tiny`` dict.txt: building the model and the criterion
reads no data.
"""

import os
import shutil

import pytest
import torch
from fairseq import tasks

from tests.helpers.runner import REPO, pretrain_args, train_cfg
from veco_plugin.errors import VecoUserError

FROZEN_DICT = os.path.join(REPO, "tests", "fixtures", "checkpoints", "veco_tiny", "dict.txt")

# (criterion, extra fairseq-train flags, the parts its model has)
CASES = [
    ("dwa", [], ("pointer",)),
    ("dwa", ["--dwa-weight", "0"], ()),
    ("weam", [], ("exchange",)),
    ("tlm", [], ()),
    ("ca_mlm", [], ()),
    ("veco_terms", ["--terms", "bi_tlm=1,bi_dwa=1,bi_cp=2"], ("pointer", "exchange")),
    ("veco_terms", ["--terms", "mono_mlm=1,bi_dwa=0"], ()),
]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("extensions")
    shutil.copy(FROZEN_DICT, root / "dict.txt")
    return root


def _setup(data, criterion, extra):
    cfg = train_cfg(pretrain_args(data, data / "unused", criterion, 2, *extra))
    return cfg, tasks.setup_task(cfg.task)


def _parts(model):
    return tuple(name for name in ("pointer", "exchange") if getattr(model, name) is not None)


@pytest.mark.parametrize("criterion,extra,parts", CASES)
def test_the_model_to_train_has_its_objectives_parts_before_the_criterion(
    data, criterion, extra, parts
):
    cfg, task = _setup(data, criterion, extra)
    model = task.build_model(cfg.model)
    assert _parts(model) == parts
    assert task.build_criterion(cfg.criterion).extensions == parts
    assert _parts(model) == parts  # the criterion adds nothing


def test_a_model_read_from_a_checkpoint_has_no_parts(data):
    cfg, task = _setup(data, "dwa", [])
    assert _parts(task.build_model(cfg.model, from_checkpoint=True)) == ()


def test_layers_the_model_lacks_are_refused_when_it_is_built(data):
    cfg, task = _setup(data, "dwa", ["--label-layer", "5"])
    with pytest.raises(VecoUserError, match="--label-layer 5: the model has layers 1..2"):
        task.build_model(cfg.model)


def _pointer(model):
    return {k: v.clone() for k, v in model.state_dict().items() if k.startswith("pointer.")}


def _equal(a, b):
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_every_model_reads_every_checkpoint_strictly(data):
    """A ``dwa`` model reads a ``dwa`` state (its pointer) and a ``tlm`` state (its own
    fresh pointer stays); a ``tlm`` model, and one read by a tool, drop the pointer."""
    cfg, task = _setup(data, "dwa", [])
    dwa = task.build_model(cfg.model)
    dwa_state = {k: v.clone() for k, v in dwa.state_dict().items()}
    tlm_cfg, tlm_task = _setup(data, "tlm", [])
    tlm = tlm_task.build_model(tlm_cfg.model)
    tlm_state = tlm.state_dict()
    trained = {k: v + 1 if k.startswith("pointer.") else v for k, v in dwa_state.items()}

    dwa.load_state_dict(dict(trained), strict=True)
    assert _equal(_pointer(dwa), {k: v for k, v in trained.items() if k.startswith("pointer.")})
    own = _pointer(dwa)
    dwa.load_state_dict(dict(tlm_state), strict=True)
    assert _equal(_pointer(dwa), own)  # the state has none: the model keeps its own
    for model in (tlm, task.build_model(cfg.model, from_checkpoint=True)):
        model.load_state_dict(dict(trained), strict=True)
        assert model.pointer is None and not _pointer(model)
        model.load_state_dict(dict(tlm_state), strict=True)
