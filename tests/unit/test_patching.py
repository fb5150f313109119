"""``wrap_once``: each wrapper once, however often the plugin is imported."""

import functools
import types

from veco_plugin.patching import wrap_once


def _tagging(label):
    def make(fn):
        @functools.wraps(fn)
        def wrapper(*args):
            return [label] + fn(*args)

        return wrapper

    return make


def test_each_tag_wraps_once_and_wrappers_stack():
    owner = types.SimpleNamespace(f=lambda: ["f"])
    for _ in range(3):  # the plugin imported three times
        wrap_once(owner, "f", _tagging("a"), "a")
        wrap_once(owner, "f", _tagging("b"), "b")
    assert owner.f() == ["b", "a", "f"]


def test_missing_attribute_is_left_alone():
    owner = types.SimpleNamespace()
    wrap_once(owner, "absent", _tagging("a"), "a")
    assert not hasattr(owner, "absent")


def test_plugin_hooks_are_installed_once():
    import sys

    from fairseq import checkpoint_utils

    from veco_plugin import errors
    from veco_plugin.checkpoints import trusted_load

    before = (sys.excepthook, checkpoint_utils.load_checkpoint_to_cpu)
    errors.install()
    trusted_load.install()
    assert (sys.excepthook, checkpoint_utils.load_checkpoint_to_cpu) == before
