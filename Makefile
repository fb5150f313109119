# The two set-up commands of the README:
#   make quickstart   pre-train -> initialize -> fine-tune -> average -> beam search -> BLEU on local data
#   make test         the test suite (what .ci/run runs)
#   make lint         black --check, isort --check, flake8, mypy over veco_plugin/ (settings:
#                     pyproject.toml, setup.cfg); .ci/run runs it before the tests
VENV ?= .venv
PY := $(VENV)/bin/python
RUN ?= runs/quickstart

.PHONY: setup test test-slow quickstart bench lint
setup: $(VENV)/.installed
$(VENV)/.installed: setup.py scripts/setup-env.sh
	bash scripts/setup-env.sh --venv $(VENV)
	touch $@

# two pytest workers (pytest-xdist), one thread each; a test module stays on one worker
# (its module fixtures are built once); session fixtures are built once per run, under a file
# lock, and shared by both workers (tests/helpers/shared.py)
test: setup
	OMP_NUM_THREADS=1 $(PY) -m pytest -q -n 2 --dist loadfile --no-loadscope-reorder --durations=25 tests

test-slow: setup
	$(PY) -m pytest -q -m slow tests

quickstart: setup
	PATH=$(abspath $(VENV))/bin:$$PATH python -m veco_plugin.quickstart --run-dir $(RUN)

bench: setup
	$(PY) benchmarks/run.py --json $(RUN)/benchmarks.json

LINT_PATHS := veco_plugin veco_plugin_startup.py benchmarks tests
LINT_TOOLS := black==26.10.1 isort==9.0.2 flake8==7.5.0 mypy==2.4.1
$(VENV)/.lint-installed: $(VENV)/.installed
	$(PY) -m pip install $(LINT_TOOLS)
	touch $@

lint: $(VENV)/.lint-installed
	$(VENV)/bin/black --check $(LINT_PATHS)
	$(VENV)/bin/isort --check-only $(LINT_PATHS)
	$(VENV)/bin/flake8 $(LINT_PATHS)
	$(VENV)/bin/mypy
