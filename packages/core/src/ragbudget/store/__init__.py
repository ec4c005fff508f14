"""The document store: ingest files into Chroma, search and read them within a token budget.

Needs the `chroma` extra: `pip install 'ragbudget[chroma]'`.
"""

from ragbudget.store.embedding import HashingEmbedding
from ragbudget.store.errors import StoreError
from ragbudget.store.models import (
    FileProblem,
    IngestReport,
    ReadResponse,
    SearchResponse,
    SearchResult,
    StoreStats,
)
from ragbudget.store.store import DEFAULT_PATH, DocumentStore

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
