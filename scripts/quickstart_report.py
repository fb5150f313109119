#!/usr/bin/env python3
"""Moved: ``python -m veco_plugin.quickstart.report`` (veco_plugin/quickstart/report.py).

Kept only for ``benchmarks/init_sweep.py``, which imports ``learning_curve`` from here;
delete once it imports ``veco_plugin.quickstart.report``.
"""

import sys

from veco_plugin.quickstart.report import learning_curve, main  # noqa: F401

if __name__ == "__main__":
    sys.exit(main())
