"""Fixtures for the LangChain plugin tests (the parts themselves live in _lc_parts.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from _lc_parts import HashingEmbedding, stdlib_docstring_documents
from langchain_core.documents import Document
from langchain_core.vectorstores import InMemoryVectorStore
from langchain_text_splitters import RecursiveCharacterTextSplitter

SPLIT_FILES = ("json/decoder.py", "json/encoder.py", "json/scanner.py")


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


@pytest.fixture(scope="session")
def split_store(stdlib: Path) -> InMemoryVectorStore:
    splitter = RecursiveCharacterTextSplitter(chunk_size=600, chunk_overlap=120,
                                              add_start_index=True)  # fmt: skip
    docs = [Document(page_content=(stdlib / f).read_text(encoding="utf-8"),
                     metadata={"source": str(stdlib / f)}) for f in SPLIT_FILES]  # fmt: skip
    copy = splitter.split_documents(docs[:1])[:4]  # a vendored copy: same texts, other ids
    store = InMemoryVectorStore(HashingEmbedding())
    store.add_documents(splitter.split_documents(docs) + copy)
    return store
