"""The warning filters are narrow (message and module), the batch-size check refuses only
what fairseq_cli.train.main asserts, and other assertion failures keep their traceback."""

import subprocess
import sys
import textwrap
import warnings

import pytest
import torch

from tests.helpers.runner import pretrain_args, train_cfg
from veco_plugin import warning_filters
from veco_plugin.errors import VecoUserError
from veco_plugin.train_flags import check_train_config

AUTOCAST = "`torch.cuda.amp.autocast(args...)` is deprecated. Please use ..."
MASKS = "Support for mismatched key_padding_mask and attn_mask is deprecated. Use ..."


@pytest.mark.parametrize(
    "message, category, module, shown",
    [
        (AUTOCAST, FutureWarning, "fairseq.tasks.fairseq_task", False),
        (MASKS, UserWarning, "torch.nn.functional", False),
        # other warnings from the same modules
        ("`torch.cuda.amp.custom_fwd(args...)` is deprecated.", FutureWarning,
         "fairseq.tasks.fairseq_task", True),
        ("Implicit dimension choice for softmax has been deprecated.", UserWarning,
         "torch.nn.functional", True),
        # the same deprecations from other modules
        (AUTOCAST, FutureWarning, "veco_plugin.tasks.veco_pretraining", True),
        (AUTOCAST, FutureWarning, "fairseq.tasks.fairseq_task_extra", True),
        (MASKS, UserWarning, "torch.nn.modules.activation", True),
    ],
)  # fmt: skip
def test_filters_match_message_and_module(message, category, module, shown):
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        warning_filters.install()
        warning_filters.install()  # idempotent
        warnings.warn_explicit(message, category, "f.py", 1, module=module, registry={})
    assert [str(w.message) for w in seen] == ([message] if shown else [])


def test_the_plugins_own_autocast_call_still_warns():
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        warning_filters.install()
        with torch.cuda.amp.autocast(enabled=False):
            pass
    assert any("torch.cuda.amp.autocast" in str(w.message) for w in seen)


def _cfg(*drop: str, extra=()):
    args = pretrain_args("DATA", "SAVE", "ca_mlm", 2, *extra)
    for flag in drop:
        i = args.index(flag)
        args = args[:i] + args[i + 2 :]
    return train_cfg(args)


def test_batch_size_check():
    check_train_config(_cfg())
    check_train_config(_cfg("--max-tokens", extra=("--batch-size", "8")))
    with pytest.raises(VecoUserError, match="--max-tokens N .* or --batch-size N"):
        check_train_config(_cfg("--max-tokens"))


@pytest.mark.parametrize(
    "flags, line",
    [
        (("--batch-size", "0"), "--batch-size 0: pass a positive number of sentences"),
        (("--max-tokens", "-5"), "--max-tokens -5: pass a positive number of tokens"),
        (("--max-tokens-valid", "0"), "--max-tokens-valid 0: pass a positive number of tokens"),
        (("--batch-size", "8", "--batch-size-valid", "0"), "--batch-size-valid 0: pass a "),
    ],
)
def test_batch_sizes_below_one(flags, line):
    args = pretrain_args("DATA", "SAVE", "ca_mlm", 2)
    i = args.index("--max-tokens")
    args = args[:i] + args[i + 2 :] + ["--max-tokens", "2000"] + list(flags)
    with pytest.raises(VecoUserError) as refused:
        check_train_config(train_cfg(args))
    assert str(refused.value).startswith(line)


def test_other_assertions_through_call_main_keep_their_traceback():
    script = textwrap.dedent("""
        import veco_plugin
        from fairseq.distributed import utils
        from tests.helpers.runner import pretrain_args, train_cfg
        args = pretrain_args("DATA", "SAVE", "ca_mlm", 2)
        i = args.index("--max-tokens")
        cfg = train_cfg(args[:i] + args[i + 2 :])  # no batch size: not train's main
        def main(cfg):
            assert cfg.dataset.max_tokens is not None, "a real bug"
        utils.call_main(cfg, main)
        """)
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 1
    assert "Traceback" in proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == "AssertionError: a real bug", proc.stderr
