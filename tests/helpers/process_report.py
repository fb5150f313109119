"""``python -m tests.helpers.process_report [exit N | raise | sleep]``: print what this
process started with (JSON on stdout, one line on stderr), then end as asked: the
command that tests/unit/test_warm_starts.py runs warm and cold and compares."""

import json
import logging
import os
import sys
import time

import fairseq  # noqa: F401  (what the plugin's commands import first)


def report() -> dict:
    root = logging.getLogger()
    return {
        "argv": sys.argv,
        "cwd": os.getcwd(),
        "path": sys.path,
        "env": os.environ.get("VECO_REPORT"),
        "session_leader": os.getsid(0) == os.getpid() == os.getpgid(0),
        "stdin": os.read(0, 10).decode(),
        "root": [root.level]
        + [
            (type(h).__name__, getattr(h.stream, "name", None), h.formatter._fmt)
            for h in root.handlers
        ],
        "main": __name__,
    }


if __name__ == "__main__":
    print(json.dumps(report()))
    print("stderr line", file=sys.stderr)
    if sys.argv[1:2] == ["raise"]:
        raise RuntimeError("raised at the top")
    if sys.argv[1:2] == ["sleep"]:
        sys.stdout.flush()
        time.sleep(60)
    sys.exit(int(sys.argv[2]) if sys.argv[1:2] == ["exit"] else 0)
