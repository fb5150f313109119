"""What the tests (and the benchmarks, where they overlap) share.

- ``toy``: tiny dictionaries, models and batches for unit tests;
- ``nmt``: toy NMT models, the H/S streams they must reproduce, checkpoint files and
  ``veco-init-nmt`` in process (the ``nmt_init`` and ``reduce_vocab`` tests);
- ``runner``: running the real console scripts (``fairseq-train --user-dir``...) in a temp dir;
- ``quickstart``: checked quickstart configs from flags, without the real tools;
- ``wmt_fixture``: a WMT14-shaped raw directory built from the system's gettext catalogs;
- ``ddp_worker``: one rank of the in-process data-parallel equivalence test (run as a script).
"""
