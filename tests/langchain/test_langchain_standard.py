"""LangChain's own standard retriever suite, run on TokenBudgetRetriever over real stores."""

from __future__ import annotations

import sysconfig
import uuid
from functools import cache
from pathlib import Path
from typing import Any

import chromadb
from _lc_parts import HashingEmbedding, ScoredRetriever, stdlib_docstring_documents
from langchain_chroma import Chroma
from langchain_core.vectorstores import InMemoryVectorStore, VectorStore
from langchain_ragbudget import TokenBudgetRetriever
from langchain_tests.integration_tests import RetrieversIntegrationTests


@cache
def _docs() -> list[Any]:
    return stdlib_docstring_documents(Path(sysconfig.get_paths()["stdlib"]))


@cache
def _memory_store() -> InMemoryVectorStore:
    store = InMemoryVectorStore(HashingEmbedding())
    store.add_documents(_docs())
    return store


@cache
def _chroma_store() -> Chroma:
    store = Chroma(
        collection_name=f"standard-{uuid.uuid4().hex[:8]}",
        embedding_function=HashingEmbedding(),
        client=chromadb.EphemeralClient(),
        collection_configuration={"hnsw": {"space": "cosine"}},
    )
    store.add_documents(_docs())
    return store


class _Standard(RetrieversIntegrationTests):
    store: VectorStore

    @property
    def retriever_constructor(self) -> type[TokenBudgetRetriever]:
        return TokenBudgetRetriever

    @property
    def retriever_query_example(self) -> str:
        return "parse command line options and arguments"

    @property
    def num_results_arg_name(self) -> str:
        return "k"


class TestInMemoryStandard(_Standard):
    """Plain vector-store retriever (no scores): the budget keeps the store's order."""

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {
            "base_retriever": _memory_store().as_retriever(search_kwargs={"k": 10}),
            "max_tokens": 4096,
            "counter": "tiktoken:cl100k_base",
        }


class TestChromaStandard(_Standard):
    """Embedded Chroma with relevance scores in metadata, ranked by them."""

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {
            "base_retriever": ScoredRetriever(
                vectorstore=_chroma_store(), k=10, relevance_scores=True
            ),
            "max_tokens": 4096,
        }
