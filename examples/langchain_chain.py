"""An LCEL RAG chain whose retrieved context always fits a token budget, offline.

    retriever | TokenBudgetCompressor | prompt | chat model

over the Python standard library's module docstrings (real text on every machine), with a small
hashing embedding and LangChain's ParrotFakeChatModel, which answers with the prompt it was
given: the output shows exactly what a model would have seen.

Run: uv run --all-packages python examples/langchain_chain.py ["your question"]
"""

from __future__ import annotations

import hashlib
import inspect
import logging
import math
import re
import sys
import sysconfig
from pathlib import Path
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.language_models.fake_chat_models import ParrotFakeChatModel
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate, PromptTemplate, format_document
from langchain_core.runnables import Runnable, RunnablePassthrough, chain
from langchain_core.vectorstores import InMemoryVectorStore
from langchain_ragbudget import TRUNCATION_EVENT, TokenBudgetCompressor
from ragbudget import TruncationInfo, get_counter, use_bundled_tiktoken_files

QUESTION = "How do I parse command line options and arguments?"
DOCUMENT_PROMPT = PromptTemplate.from_template("[{source}]\n{page_content}")
SEPARATOR = "\n\n"
_WORD = re.compile(r"[a-z0-9_]+")
_DOCSTRING = re.compile(r"""\A(?:[ \t]*(?:#[^\n]*)?\n)*[ \t]*[rRuU]?(\"\"\"|''')(.*?)\1""", re.S)


class HashingEmbedding(Embeddings):
    """Bag-of-words vectors by feature hashing: offline, deterministic, good enough to find
    the argparse docstring for a question about command-line options."""

    def __init__(self, size: int = 512) -> None:
        self.size = size

    def _embed(self, text: str) -> list[float]:
        vec = [0.0] * self.size
        for word in _WORD.findall(text.lower()):
            digest = hashlib.blake2b(word.encode(), digest_size=8).digest()
            vec[int.from_bytes(digest, "big") % self.size] += 1.0
        norm = math.sqrt(sum(v * v for v in vec)) or 1.0
        return [v / norm for v in vec]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._embed(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._embed(text)


class BudgetReport(BaseCallbackHandler):
    """Receives the `ragbudget_truncation` event that each budgeted call emits."""

    def __init__(self) -> None:
        self.infos: list[TruncationInfo] = []

    def on_custom_event(self, name: str, data: Any, *, run_id: UUID, **kwargs: Any) -> None:
        if name == TRUNCATION_EVENT:
            self.infos.append(data)


def stdlib_documents() -> list[Document]:
    """One Document per top-level standard-library module with a substantial docstring."""
    docs = []
    for path in sorted(Path(sysconfig.get_paths()["stdlib"]).glob("*.py")):
        with path.open(encoding="utf-8", errors="replace") as f:
            match = _DOCSTRING.match(f.read(20_000))
        if match and len(text := inspect.cleandoc(match.group(2))) >= 300:
            docs.append(Document(id=path.stem, page_content=text, metadata={"source": path.name}))
    return docs


def build_chain(
    max_tokens: int, counter: str
) -> tuple[Runnable[str, str], Runnable[str, list[Document]], TokenBudgetCompressor]:
    """The RAG chain, and its retriever and budget for inspection."""
    store = InMemoryVectorStore(HashingEmbedding())
    store.add_documents(stdlib_documents())

    @chain
    def retriever(query: str) -> list[Document]:
        """LangChain's "add scores to retriever results" recipe: scores in metadata."""
        hits = store.similarity_search_with_score(query, k=20)
        return [d.model_copy(update={"metadata": {**d.metadata, "score": s}}) for d, s in hits]

    # The one added line: the budget counts each document as the prompt renders it.
    budget = TokenBudgetCompressor(
        max_tokens=max_tokens,
        counter=counter,
        document_formatter=DOCUMENT_PROMPT,
        document_separator=SEPARATOR,
    )

    def format_docs(docs: list[Document]) -> str:
        return SEPARATOR.join(format_document(d, DOCUMENT_PROMPT) for d in docs)

    prompt = ChatPromptTemplate.from_messages(
        [
            ("system", "Answer the question using only the context."),
            ("human", "Context:\n{context}\n\nQuestion: {question}"),
        ]
    )
    rag = (
        {"context": retriever | budget | format_docs, "question": RunnablePassthrough()}
        | prompt
        | ParrotFakeChatModel()
        | StrOutputParser()
    )
    return rag, retriever, budget


def main(question: str = QUESTION, max_tokens: int = 1000) -> dict[str, Any]:
    counter = get_counter("tiktoken:cl100k_base")
    rag, retriever, budget = build_chain(max_tokens, "tiktoken:cl100k_base")
    report = BudgetReport()

    answer = rag.invoke(question, config={"callbacks": [report]})
    fetched = retriever.invoke(question)
    docs = budget.invoke(fetched)
    unbudgeted = counter.count(SEPARATOR.join(format_document(d, DOCUMENT_PROMPT) for d in fetched))

    info = report.infos[-1]
    context = answer.split("Context:\n", 1)[1].rsplit("\n\nQuestion:", 1)[0]
    print(f"Question: {question}")
    print(f"Retrieved {info.original_count} documents; kept {info.returned_count} "
          f"within {max_tokens:,} tokens ({info.counter}):")  # fmt: skip
    for doc in docs:
        note = doc.metadata["ragbudget"]
        cut = "  (cut)" if note["cut"] else ""
        print(f"  rank {note['rank']:>2}  score {note['score']:.3f}  "
              f"{note['tokens']:>4} tokens  {doc.metadata['source']}{cut}")  # fmt: skip
    print(f"\nragbudget_truncation event: {info.model_dump_json()}")
    print(f"The model saw {counter.count(context):,} tokens of context (budget {max_tokens:,}); "
          f"without the budget it would have seen {unbudgeted:,}.\n")  # fmt: skip
    print("What the model saw (first lines):")
    print("\n".join(answer.splitlines()[:8]))
    return {
        "info": info.model_dump(),
        "context_tokens": counter.count(context),
        "unbudgeted_tokens": unbudgeted,
        "sources": [d.metadata["source"] for d in docs],
        "answer": answer,
    }


def _offline_tiktoken() -> None:
    """tiktoken downloads its BPE files on first use; llama-index-core ships cl100k_base."""
    use_bundled_tiktoken_files()


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    _offline_tiktoken()
    main(sys.argv[1] if len(sys.argv) > 1 else QUESTION)
