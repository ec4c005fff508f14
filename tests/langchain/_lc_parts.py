"""Real parts for the LangChain plugin tests: stdlib text, an offline embedding, retrievers and
callback handlers. (A plain module: conftest.py holds only fixtures.)"""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import math
import re
from pathlib import Path
from typing import Any
from uuid import UUID

from langchain_core.callbacks import (
    AsyncCallbackHandler,
    AsyncCallbackManagerForRetrieverRun,
    BaseCallbackHandler,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.retrievers import BaseRetriever
from langchain_core.vectorstores import VectorStore

_WORD = re.compile(r"[a-z0-9_]+")


class HashingEmbedding(Embeddings):
    """Bag-of-words vectors by feature hashing: deterministic, offline, and similar texts
    really do get similar vectors (unlike a random fake embedding). Counts are non-negative,
    so cosine similarity stays in [0, 1], as relevance scores must."""

    def __init__(self, size: int = 512) -> None:
        self.size = size

    def _embed(self, text: str) -> list[float]:
        vec = [0.0] * self.size
        for word in _WORD.findall(text.lower()):
            h = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=8).digest(), "big")
            vec[h % self.size] += 1.0
        norm = math.sqrt(sum(v * v for v in vec)) or 1.0
        return [v / norm for v in vec]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._embed(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._embed(text)


_DOCSTRING = re.compile(r"""\A(?:[ \t]*(?:#[^\n]*)?\n)*[ \t]*[rRuU]?(\"\"\"|\'\'\')(.*?)\1""", re.S)


def stdlib_docstring_documents(stdlib: Path, *, min_chars: int = 300) -> list[Document]:
    """One Document per top-level stdlib module with a substantial docstring (read without
    parsing whole modules, which would take seconds)."""
    docs = []
    for path in sorted(stdlib.glob("*.py")):
        with path.open(encoding="utf-8", errors="replace") as f:
            head = f.read(20_000)
        match = _DOCSTRING.match(head)
        if match is None:
            continue
        text = inspect.cleandoc(match.group(2))
        if len(text) >= min_chars:
            docs.append(Document(id=path.stem, page_content=text, metadata={"source": path.name}))
    return docs


class ScoredRetriever(BaseRetriever):
    """LangChain's "add scores to retriever results" recipe as a retriever: the store's
    score goes into each (fresh) document's metadata under `score_key`. InMemoryVectorStore's
    plain score is a cosine similarity; Chroma's is a distance, so it uses relevance scores."""

    vectorstore: VectorStore
    k: int = 8
    score_key: str = "score"
    relevance_scores: bool = False
    async_calls: int = 0

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        vs = self.vectorstore
        if self.relevance_scores:
            hits = vs.similarity_search_with_relevance_scores(query, k=self.k)
        else:
            hits = vs.similarity_search_with_score(query, k=self.k)
        return [self._scored(doc, score) for doc, score in hits]

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun
    ) -> list[Document]:
        self.async_calls += 1
        vs = self.vectorstore
        if self.relevance_scores:
            hits = await vs.asimilarity_search_with_relevance_scores(query, k=self.k)
        else:
            hits = await vs.asimilarity_search_with_score(query, k=self.k)
        return [self._scored(doc, score) for doc, score in hits]

    def _scored(self, doc: Document, score: float) -> Document:
        return doc.model_copy(update={"metadata": {**doc.metadata, self.score_key: score}})


class ListRetriever(BaseRetriever):
    """Returns the given documents as they are (the caller's objects), for mutation checks."""

    docs: list[Document]

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        return self.docs


class AsyncOnlyRetriever(BaseRetriever):
    """Has only an async path: the sync one fails, so a wrapper that answers `ainvoke` must
    have awaited the base retriever's async method."""

    docs: list[Document]

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        msg = "this retriever is async only"
        raise RuntimeError(msg)

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun
    ) -> list[Document]:
        await asyncio.sleep(0)
        return list(self.docs)


class EventRecorder(BaseCallbackHandler):
    """A callback handler that keeps every custom event it receives, and the run id of each
    retriever run by name (to check which run an event belongs to)."""

    def __init__(self) -> None:
        self.events: list[tuple[str, Any, UUID]] = []
        self.retriever_runs: dict[str, UUID] = {}

    def on_retriever_start(
        self, serialized: Any, query: str, *, run_id: UUID, **kwargs: Any
    ) -> None:  # fmt: skip
        self.retriever_runs[kwargs["name"]] = run_id

    def on_custom_event(
        self, name: str, data: Any, *, run_id: UUID, **kwargs: Any
    ) -> None:  # fmt: skip
        self.events.append((name, data, run_id))


class AsyncEventRecorder(AsyncCallbackHandler):
    """The async handler kind: awaited by async dispatch."""

    def __init__(self) -> None:
        self.events: list[tuple[str, Any, UUID]] = []

    async def on_custom_event(
        self, name: str, data: Any, *, run_id: UUID, **kwargs: Any
    ) -> None:  # fmt: skip
        self.events.append((name, data, run_id))
