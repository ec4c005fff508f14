"""Shared fixtures for the MCP server tests: one ingested store for the whole session.

The corpus is real public text: a few standard-library modules plus `pydoc_data/topics.py`,
a ~0.75 MB file that no budget can hold (the context bomb).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastmcp")

from mcp_helpers import COUNTER_SPEC
from ragbudget import TokenCounter, get_counter
from ragbudget_server.mcp import ServerSettings, create_server
from ragbudget_server.store import DocumentStore

CORPUS_FILES = ("json", "textwrap.py", "shlex.py", "pydoc_data/topics.py")
"""Stdlib paths ingested once per session; the last one is the context bomb."""


@pytest.fixture(scope="session")
def corpus_paths(stdlib: Path) -> list[Path]:
    paths = [stdlib / name for name in CORPUS_FILES]
    for path in paths:
        if not path.exists():  # pragma: no cover - a stripped-down Python
            pytest.skip(f"stdlib file {path} missing")
    return paths


@pytest.fixture(scope="session")
def bomb(stdlib: Path) -> Path:
    return stdlib / "pydoc_data" / "topics.py"


@pytest.fixture(scope="session")
def exact_counter() -> TokenCounter:
    return get_counter(COUNTER_SPEC)


@pytest.fixture(scope="session")
def store_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("mcp-store")


@pytest.fixture(scope="session")
def shared_store(
    store_dir: Path, corpus_paths: list[Path], exact_counter: TokenCounter
) -> DocumentStore:
    """The session's store, ingested once; tests only read it."""
    store = DocumentStore(path=store_dir, counter=exact_counter)
    report = store.ingest(corpus_paths)
    assert report.chunks_added > 100, report
    return store


@pytest.fixture
def server(shared_store: DocumentStore, store_dir: Path) -> Any:
    """A server over the shared store, budgets by the exact counter, default ceiling."""
    return create_server(ServerSettings(db=store_dir, counter=COUNTER_SPEC), store=shared_store)


def _source(store: DocumentStore, suffix: str) -> str:
    matches = [source for source in store.sources() if source.endswith(suffix)]
    assert len(matches) == 1, f"expected one stored {suffix}, got {matches}"
    return matches[0]


@pytest.fixture(scope="session")
def bomb_source(shared_store: DocumentStore) -> str:
    """The context bomb's `source`, as search results name it (paging it is slow: ~5 s/page)."""
    return _source(shared_store, "/pydoc_data/topics.py")


@pytest.fixture(scope="session")
def small_source(shared_store: DocumentStore) -> str:
    """A ~5,000-token document (textwrap.py): larger than small budgets, cheap to page."""
    return _source(shared_store, "/textwrap.py")
