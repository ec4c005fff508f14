"""Fixtures for the middleware tests: a third party's FastMCP server, no store."""

from __future__ import annotations

import pytest
from ragbudget import TokenCounter, get_counter

pytest.importorskip("fastmcp")


@pytest.fixture(scope="session")
def exact_counter() -> TokenCounter:
    """The exact counter the middleware tests measure budgets with (tiktoken cl100k_base)."""
    return get_counter("tiktoken:cl100k_base")
