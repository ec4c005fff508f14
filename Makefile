# Every target bootstraps itself: uv (installed with pip when missing), then the workspace.
SHELL := /bin/bash
export UV_PYTHON_DOWNLOADS := never
PYTHON ?= python3
UV := $(shell command -v uv 2>/dev/null || echo "$(PYTHON) -m uv")
RUN := $(UV) run --all-packages --frozen

.PHONY: bootstrap demo test lint format bench bench-estimator

bootstrap:
	@command -v uv >/dev/null 2>&1 || $(PYTHON) -m uv --version >/dev/null 2>&1 || $(PYTHON) -m pip install --quiet uv
	@$(UV) sync --all-packages --frozen --quiet

demo: bootstrap
	$(RUN) python examples/demo.py
	$(RUN) python examples/mcp_demo.py

test: bootstrap
	$(RUN) pytest -q -p no:cacheprovider

lint: bootstrap
	$(RUN) ruff format --check .
	$(RUN) ruff check .
	$(RUN) mypy --strict packages/core/src packages/langchain_plugin/src packages/llamaindex_plugin/src

format: bootstrap
	$(RUN) ruff format .
	$(RUN) ruff check --fix .

bench: bootstrap
	$(RUN) python benchmarks/run_all.py

bench-estimator: bootstrap
	$(RUN) python tools/estimator/calibrate.py
	$(RUN) python tools/estimator/unseen.py
