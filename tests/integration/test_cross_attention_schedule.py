"""``--cross-attention-only-updates`` through fairseq's own Trainer and optimizers.

For each optimizer path fairseq builds (fp32; ``FP16Optimizer`` with its flat fp32
master buffer and without (``--fp16-no-flatten-grads``); ``--memory-efficient-bf16``;
``--amp``), in bf16 where the path is mixed precision (what runs on CPU), with
weight decay on: after the frozen updates every non-cross-attention parameter is
bit-identical, their optimizer state is untouched, and the cross-attention moved.

fairseq-train itself cannot run these on CPU (``--bf16`` implies ``--tpu`` in its
argument parser, and the flat buffer is built on ``torch.cuda.current_device()``),
so the Trainer is built in-process as fairseq_cli.train does; for the flat path the
optimizer is fairseq's ``FP16Optimizer`` given the flat buffer that
``build_fp32_params`` would make, keyed by the CPU's device index.
"""

import pytest
import torch
from fairseq import optim, tasks
from fairseq.optim.fp16_optimizer import FP16Optimizer
from fairseq.optim.lr_scheduler import build_lr_scheduler
from fairseq.trainer import Trainer

from tests.helpers.runner import pretrain_args, train_cfg

FROZEN_UPDATES = 3


def _trainer(data, precision):
    flat = "flat" in precision  # not a fairseq flag: the hand-built flat optimizer below
    precision = [p for p in precision if p != "flat"]
    cfg = train_cfg(
        pretrain_args(
            data,
            "unused",
            "ca_mlm",
            FROZEN_UPDATES + 1,
            "--weight-decay",
            "0.1",
            "--clip-norm",
            "1.0",
            "--lr",
            "1e-2",
            "--lr-scheduler",
            "fixed",
            "--warmup-updates",
            "0",
            "--max-tokens",
            "400",
            "--max-mono-positions",
            "32",
            "--max-bi-positions",
            "32",
            "--cross-attention-only-updates",
            FROZEN_UPDATES,
            "--seed",
            "3",
            *precision,
        )
    )
    task = tasks.setup_task(cfg.task)
    task.load_dataset("train")
    model = task.build_model(cfg.model)
    trainer = Trainer(cfg, task, model, task.build_criterion(cfg.criterion))
    if flat:
        params = [p for p in trainer.model.parameters()]
        flat = torch.nn.Parameter(torch.cat([p.data.float().view(-1) for p in params]))
        flat.grad = flat.data.new_zeros(flat.numel())
        fp32_optimizer = optim.build_optimizer(cfg.optimizer, [flat])
        trainer._optimizer = FP16Optimizer(cfg, params, fp32_optimizer, {None: flat})
        trainer._lr_scheduler = build_lr_scheduler(cfg.lr_scheduler, trainer._optimizer)
        trainer._lr_scheduler.step_update(0)
    return trainer


def _adam_state(trainer):
    """Adam's state of each model parameter (``exp_avg``/``exp_avg_sq`` views into a
    flat master buffer), keyed by the model parameter's name."""
    opt = trainer.optimizer
    inner = opt.fp32_optimizer if hasattr(opt, "fp32_optimizer") else opt
    state = inner.optimizer.state
    named = list(trainer.model.named_parameters())
    if isinstance(opt, FP16Optimizer) and opt.has_flat_params:
        flat = state.get(opt.fp32_params[None], {})
        out, offset = {}, 0
        for name, p in named:
            n = p.numel()
            out[name] = {
                k: flat[k][offset : offset + n] for k in ("exp_avg", "exp_avg_sq") if k in flat
            }
            offset += n
        return out
    copies = (
        dict(zip(map(id, opt.fp16_params), opt.fp32_params))
        if isinstance(opt, FP16Optimizer)
        else {}
    )
    return {name: state.get(copies.get(id(p), p), {}) for name, p in named}


@pytest.mark.parametrize(
    "precision",
    [
        [],
        ["--bf16", "flat"],
        ["--bf16", "--fp16-no-flatten-grads"],
        ["--bf16", "--memory-efficient-bf16"],
        ["--amp"],
    ],
    ids=["fp32", "bf16-flat", "bf16-no-flatten", "memory-efficient-bf16", "amp"],
)
def test_frozen_parameters_and_their_optimizer_state_stay_bit_identical(pretrain_data, precision):
    trainer = _trainer(pretrain_data, precision)
    before = {n: p.detach().clone() for n, p in trainer.model.named_parameters()}
    epoch = trainer.get_train_iterator(epoch=1).next_epoch_itr(shuffle=False)
    for _ in range(FROZEN_UPDATES):
        trainer.train_step([next(epoch)])
    assert trainer.get_num_updates() == FROZEN_UPDATES
    after = dict(trainer.model.named_parameters())
    state = _adam_state(trainer)
    cross = [n for n in before if ".cross_attn" in n]
    frozen = [n for n in before if ".cross_attn" not in n]
    assert len(cross) == 20 and len(frozen) > 30
    for name in frozen:
        assert torch.equal(after[name], before[name]), name
        for value in state[name].values():
            assert not torch.is_tensor(value) or value.numel() == 1 or not value.any(), name
    assert all(not torch.equal(after[n], before[n]) for n in cross)
    assert all(state[n] for n in cross)

    trainer.train_step([next(epoch)])  # the schedule is over: everything trains
    moved = [n for n in frozen if not torch.equal(after[n], before[n])]
    assert len(moved) == len(frozen)
