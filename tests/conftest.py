"""Shared test setup: offline tiktoken files and small helpers every suite uses."""

from __future__ import annotations

import sysconfig
from pathlib import Path

import pytest
from ragbudget import use_bundled_tiktoken_files

# tiktoken downloads its BPE files on first use; llama-index-core ships cl100k_base and
# o200k_base, which is what the tests use (the machine has no network).
use_bundled_tiktoken_files()

STDLIB = Path(sysconfig.get_paths()["stdlib"])


@pytest.fixture(scope="session")
def stdlib() -> Path:
    """The Python standard library's sources: real public text on every machine."""
    return STDLIB


@pytest.fixture(scope="session")
def cl100k():  # type: ignore[no-untyped-def]
    """An exact counter (tiktoken cl100k_base, offline)."""
    from ragbudget import get_counter

    return get_counter("tiktoken:cl100k_base")
