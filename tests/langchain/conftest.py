"""Fixtures for the LangChain plugin tests (the parts themselves live in _lc_parts.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from _lc_parts import HashingEmbedding, stdlib_docstring_documents
from langchain_core.documents import Document
from langchain_core.vectorstores import InMemoryVectorStore


@pytest.fixture(scope="session")
def embedding() -> HashingEmbedding:
    return HashingEmbedding()


@pytest.fixture(scope="session")
def stdlib_docs(stdlib: Path) -> list[Document]:
    docs = stdlib_docstring_documents(stdlib)
    assert len(docs) > 50
    return docs


@pytest.fixture(scope="session")
def memory_store(embedding: HashingEmbedding, stdlib_docs: list[Document]) -> InMemoryVectorStore:
    store = InMemoryVectorStore(embedding)
    store.add_documents(stdlib_docs)
    return store
