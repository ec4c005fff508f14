"""The document store: ingest files into Chroma, search and read them within a token budget.

Part of `ragbudget-server`: `pip install ragbudget-server`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ragbudget_server.store.errors import StoreError
from ragbudget_server.store.models import (
    FileProblem,
    IngestReport,
    ReadResponse,
    SearchResponse,
    SearchResult,
    StoreStats,
)

if TYPE_CHECKING:
    from ragbudget_server.store.embedding import HashingEmbedding
    from ragbudget_server.store.store import DEFAULT_PATH, DocumentStore

# Loaded on first use: they import Chroma (two seconds), which the CLI's checks and errors
# (no store at a path, an unreadable folder) and the store's models do not need.
_LAZY = {
    "DEFAULT_PATH": "ragbudget_server.store.store",
    "DocumentStore": "ragbudget_server.store.store",
    "HashingEmbedding": "ragbudget_server.store.embedding",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    msg = f"module {__name__!r} has no attribute {name!r}"
    raise AttributeError(msg)


__all__ = [
    "DEFAULT_PATH",
    "DocumentStore",
    "FileProblem",
    "HashingEmbedding",
    "IngestReport",
    "ReadResponse",
    "SearchResponse",
    "SearchResult",
    "StoreError",
    "StoreStats",
]
