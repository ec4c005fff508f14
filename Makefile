# Every target bootstraps itself: uv (installed with pip when missing), then the workspace.
SHELL := /bin/bash
export UV_PYTHON_DOWNLOADS := never
# Bytecode at install: the suite and the MCP clients start many Python processes, which would
# otherwise each compile what they import on a fresh machine.
export UV_COMPILE_BYTECODE := 1
PYTHON ?= python3
UV := $(shell command -v uv 2>/dev/null || echo "$(PYTHON) -m uv")
RUN := $(UV) run --all-packages --frozen

.PHONY: bootstrap demo test test-full lint format bench bench-estimator docs figures test-lowest dist-check

bootstrap:
	@command -v uv >/dev/null 2>&1 || $(PYTHON) -m uv --version >/dev/null 2>&1 || $(PYTHON) -m pip install --quiet uv
	@$(UV) sync --all-packages --frozen --quiet

demo: bootstrap
	$(RUN) python examples/demo.py
	$(RUN) python examples/mcp_demo.py

# Two workers (2-core CI), each test file on one worker: its module fixtures start once.
# `full` tests (large stores and walks, whose properties smaller ones show here) are left out,
# to keep the suite within 5 minutes on 2 cores.
test: bootstrap
	$(RUN) pytest -q -p no:cacheprovider -n 2 --dist loadfile -m "not full"

# Every test, the `full` ones included (the 5,200-chunk cursor walks).
test-full: bootstrap
	$(RUN) pytest -q -p no:cacheprovider -n 2 --dist loadfile

lint: bootstrap
	$(RUN) ruff format --check .
	$(RUN) ruff check .
	$(RUN) mypy --strict packages/core/src packages/guard/src packages/server/src packages/langchain_plugin/src packages/llamaindex_plugin/src packages/llamaindex_tools_plugin/src

format: bootstrap
	$(RUN) ruff format .
	$(RUN) ruff check --fix .

# Every benchmark, then the docs' figures blocks rewritten from the results they wrote
# (benchmarks/results/*.json; tests/test_doc_figures.py checks the two agree), even when a
# benchmark failed (make bench still fails then).
bench: bootstrap
	$(RUN) python benchmarks/run_all.py; status=$$?; \
	$(RUN) python benchmarks/doc_figures.py && exit $$status

bench-estimator: bootstrap
	$(RUN) python tools/estimator/calibrate.py
	$(RUN) python tools/estimator/unseen.py
	$(RUN) python tools/estimator/audit.py
	$(RUN) python tools/estimator/fuzz.py
	$(RUN) python tools/estimator/short.py
	$(RUN) python tools/estimator/stages.py

# The documentation site (site/), strict: a broken link or a missing page fails the build.
docs: bootstrap
	NO_MKDOCS_2_WARNING=1 $(RUN) --group docs mkdocs build --strict

# Plots in docs/img/ drawn from the benchmarks' tables (run after make bench-estimator).
figures: bootstrap
	$(RUN) --group docs python benchmarks/plot_figures.py

# The suite against the lowest version of every direct dependency (in .lowest/, uv.lock untouched).
test-lowest: bootstrap
	.ci/test-lowest

# Wheels from a clean clone of HEAD: twine check --strict, install into a fresh venv, run.
dist-check: bootstrap
	.ci/dist-check
