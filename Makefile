# The two set-up commands of the README:
#   make quickstart   pre-train -> initialize -> fine-tune -> average -> beam search -> BLEU on local data
#   make test         the test suite (what .ci/run runs)
VENV ?= .venv
PY := $(VENV)/bin/python
RUN ?= runs/quickstart

.PHONY: setup test test-slow quickstart bench
setup: $(VENV)/.installed
$(VENV)/.installed: setup.py scripts/setup-env.sh
	bash scripts/setup-env.sh --venv $(VENV)
	touch $@

test: setup
	OMP_NUM_THREADS=2 $(PY) -m pytest -q tests

test-slow: setup
	$(PY) -m pytest -q -m slow tests

quickstart: setup
	PATH=$(abspath $(VENV))/bin:$$PATH bash scripts/quickstart.sh --run-dir $(RUN)

bench: setup
	$(PY) benchmarks/run.py --json $(RUN)/benchmarks.json
