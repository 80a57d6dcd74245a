# The README's quick start:
#   make reproduce   set up .venv and run the whole default (quick) reproduction, report, audit
#   make test        set up .venv with the dev tools, then lint and run the test suite
#   make test-fast   the tests without the workflow-level runs (the edit-test loop)
# Variables: CORES (default 2), CONFIG (extra --configfile, e.g. config/paper.yaml),
# SNAKEMAKE_ARGS (anything else for snakemake), TORCH (the torch requirement to install first),
# TEST_WORKERS (parallel pytest workers; default: the CPUs this process may use, at most 4).
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
CORES ?= 2
CONFIG ?=
SNAKEMAKE_ARGS ?=
# At most 4: each workflow-level test runs Snakemake on 2 cores and up to ~1.5 GB.
TEST_WORKERS ?= $(shell n=$$(nproc 2>/dev/null || echo 2); echo $$(( n < 4 ? n : 4 )))
# Installed before galu so that galu's range `torch>=2.1` is already met: on our machines
# this release is a CPU build on local disk. With a GPU, e.g. TORCH="torch==2.13.0" plus
# PIP_EXTRA_INDEX_URL for your CUDA version.
TORCH ?= torch==2.13.0

BIN := $(abspath $(VENV))/bin
STAMP := $(VENV)/.installed
RUN := PATH="$(BIN):$$PATH"
CONFIG_ARGS := $(if $(CONFIG),--configfile $(CONFIG),)
# A module's tests stay on one worker (tests/conftest.py groups them); the longest go first.
PYTEST_PARALLEL := -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder

.PHONY: setup reproduce report audit lint test test-fast clean-outputs

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet "$(TORCH)"
	$(BIN)/python -m pip install --quiet -e ".[dev]"
	touch $@

setup: $(STAMP)

# The workflow builds results/report.zip itself when it succeeds (config: report.on_success);
# a scale other than quick writes results/<scale>/report.zip (galu/workflow/scales.py).
# The default scale then sets this run beside README's "What reproduces" (the test suite runs
# the tiny configuration, not this one): a verdict that differs fails; numbers that moved past
# the precision shown (another CPU's arithmetic) are a NOTE; the verdict summary comes last.
reproduce: $(STAMP)
	$(RUN) galu run --cores $(CORES) $(CONFIG_ARGS) $(SNAKEMAKE_ARGS)
	$(MAKE) --no-print-directory audit
	$(if $(CONFIG),,$(RUN) galu readme --verdicts)

report: $(STAMP)
	$(RUN) galu run --cores $(CORES) $(CONFIG_ARGS) --report $$($(BIN)/python -m galu.workflow.scales $(CONFIG))

audit: $(STAMP)
	$(RUN) galu audit

lint: $(STAMP)
	$(RUN) ruff check .
	$(RUN) ruff format --check .
	$(RUN) snakefmt --check Snakefile workflow
	$(RUN) snakemake --lint

test: lint
	$(RUN) pytest $(PYTEST_PARALLEL)

# The edit-test loop: every test but the workflow-level runs (marked slow), in about a minute.
test-fast: $(STAMP)
	$(RUN) pytest $(PYTEST_PARALLEL) -m "not slow"

# Removes every workflow output (results, figures, logs) of every scale; raw data under data/
# and the published runs under published/ are kept.
clean-outputs:
	rm -rf results figures logs
