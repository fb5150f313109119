"""Wrapping fairseq's (and torch's) functions in place, once.

The plugin hooks into a few functions fairseq calls by module attribute (checkpoint
readers, dataset loading, ``sys.excepthook``). ``--user-dir`` may import the plugin more
than once per process, so every wrapper is installed through ``wrap_once``.
"""

from typing import Any, Callable

_TAGS = "__veco_wrappers__"  # the tags of the wrappers around a function (inherited
# through functools.wraps, which copies the wrapped function's __dict__)


def wrap_once(owner: Any, name: str, make_wrapper: Callable[[Any], Any], tag: str) -> None:
    """``owner.name = make_wrapper(owner.name)`` unless a wrapper tagged ``tag`` is
    already in place; nothing when ``owner`` has no ``name``."""
    fn = getattr(owner, name, None)
    if fn is None:
        return
    tags: frozenset = getattr(fn, _TAGS, frozenset())
    if tag in tags:
        return
    wrapper = make_wrapper(fn)
    setattr(wrapper, _TAGS, tags | {tag})
    setattr(owner, name, wrapper)
