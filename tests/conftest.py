"""Shared test setup: offline tiktoken files and small helpers every suite uses."""

from __future__ import annotations

import os
import sysconfig
from pathlib import Path

import pytest


def _tiktoken_cache() -> str | None:
    try:
        import llama_index.core
    except ImportError:  # pragma: no cover
        return None
    path = Path(llama_index.core.__file__).parent / "_static" / "tiktoken_cache"
    return str(path) if path.is_dir() else None


# tiktoken downloads its BPE files on first use; llama-index-core ships cl100k_base and
# o200k_base, which is what the tests use (the machine has no network).
if "TIKTOKEN_CACHE_DIR" not in os.environ and (_cache := _tiktoken_cache()):
    os.environ["TIKTOKEN_CACHE_DIR"] = _cache

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
