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

# the messages as torch, hydra and fairseq's data loader raise them, with their modules
REAL = [
    ("`torch.cuda.amp.autocast(args...)` is deprecated. Please use "
     "`torch.amp.autocast('cuda', args...)` instead.", FutureWarning,
     "fairseq.tasks.fairseq_task"),
    ("Support for mismatched key_padding_mask and attn_mask is deprecated. Use same type "
     "for both instead.", UserWarning, "torch.nn.functional"),
    ("hydra.experimental.initialize() is no longer experimental. Use hydra.initialize()",
     UserWarning, "hydra.experimental.initialize"),
    ("\nThe version_base parameter is not specified.\nPlease specify a compatability "
     "version level, or None.\nWill assume defaults for version 1.1", UserWarning,
     "hydra.experimental.initialize"),
    ("hydra.experimental.compose() is no longer experimental. Use hydra.compose()",
     UserWarning, "hydra.experimental.compose"),
    ("In 'config': Usage of deprecated keyword in package header '# @package _group_'.\n"
     "See https://hydra.cc/docs/1.2/upgrades/1.0_to_1.1/changes_to_package_header for "
     "more information", UserWarning, "hydra.core.default_element"),
    ("\nThe strict flag in the compose API is deprecated.\n", UserWarning, "hydra.compose"),
    ("'pin_memory' argument is set as true but no accelerator is found, then device "
     "pinned memory won't be used.", UserWarning, "torch.utils.data.dataloader"),
    ("`broadcast_buffers` is deprecated. Use `forward_sync_buffers` instead. IMPORTANT: "
     "unlike `broadcast_buffers=False`, `forward_sync_buffers=False` still syncs buffers at "
     "init.", FutureWarning, "veco_plugin.distributed.cpu_ddp"),
]  # fmt: skip


def _shown(message, category, module) -> bool:
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        warning_filters.install()
        warning_filters.install()  # idempotent
        warnings.warn_explicit(message, category, "f.py", 1, module=module, registry={})
    return [str(w.message) for w in seen] == [message]


# attributed to whatever called fairseq's configuration (hydra's stack level): matched anywhere
SCHEMA = (
    "\n'config' is validated against ConfigStore schema with the same name.\nThis behavior "
    "is deprecated in Hydra 1.1 and will be removed in Hydra 1.2."
)


@pytest.mark.parametrize("module", ["sys", "threading", "veco_plugin.cli.xtreme"])
def test_hydras_schema_warning_is_matched_by_its_words_alone(module):
    assert not _shown(SCHEMA, UserWarning, module)
    assert _shown("Another deprecation.", UserWarning, module)
    assert _shown(SCHEMA, DeprecationWarning, module)


@pytest.mark.parametrize("message, category, module", REAL)
def test_each_filter_matches_its_message_from_its_module_only(message, category, module):
    assert not _shown(message, category, module)
    # the same warning raised elsewhere (the plugin's own code, a sibling module)
    assert _shown(message, category, "veco_plugin.tasks.veco_pretraining")
    assert _shown(message, category, module + "_extra")
    # another warning from the same module
    assert _shown("Another deprecation.", category, module)
    assert _shown(message, DeprecationWarning, module)


def test_fairseqs_configuration_warns_nothing_in_a_thread_either():
    """veco-xtreme's and veco-derived-transfer's stages parse fairseq-train commands in
    threads (--jobs): there hydra attributes its schema deprecation to ``threading``, not
    ``sys`` (was: two four-line Hydra warnings above veco-xtreme's summary)."""
    import threading

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        warning_filters.install()
        _cfg()  # in this thread, then in another
        thread = threading.Thread(target=_cfg)
        thread.start()
        thread.join()
    assert not [str(w.message) for w in seen if "Hydra" in str(w.message)], seen


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
