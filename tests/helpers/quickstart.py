"""Quickstart configs without the real tools: flags -> checked :class:`Config`."""

from veco_plugin.quickstart import options


def found(tool: str) -> str:
    """A ``which`` that finds every tool."""
    return f"/usr/bin/{tool}"


def config(*flags: str, which=found) -> options.Config:
    """The checked config of ``flags`` (``--run-dir`` defaults to ``/run``, ``--jobs`` to 1)."""
    argv = ["--run-dir", "/run", "--jobs", "1", *flags]
    return options.check(options.parse_args(argv), which=which)
