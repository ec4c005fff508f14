"""LlamaIndex: a query engine that never sends more retrieved text than the budget.

    uv run --all-packages python examples/llamaindex_query.py

Runs offline on real text (the docstrings of a few standard-library modules), with a small
bag-of-words embedding and MockLLM, which answers with the prompt it was sent: what you see
is exactly what an LLM would get. Swap in your own embed model and LLM; the postprocessor
line stays the same.
"""

from __future__ import annotations

import ast
import math
import re
import sysconfig
import zlib
from pathlib import Path
from typing import Any

from llama_index.core import Document, VectorStoreIndex
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.instrumentation import get_dispatcher  # type: ignore[attr-defined]
from llama_index.core.instrumentation.event_handlers import BaseEventHandler
from llama_index.core.instrumentation.events import BaseEvent
from llama_index.core.llms import MockLLM
from llama_index.core.node_parser import TokenTextSplitter
from llama_index.core.schema import MetadataMode
from llama_index.postprocessor.ragbudget import TokenBudgetEvent, TokenBudgetPostprocessor
from pydantic import Field
from ragbudget import get_counter, use_bundled_tiktoken_files

# tiktoken downloads its BPE files on first use; llama-index-core ships cl100k_base, so point
# tiktoken there when nothing else is set (this example runs offline).
use_bundled_tiktoken_files()

STDLIB = Path(sysconfig.get_paths()["stdlib"])
MODULES = ["json", "argparse", "statistics", "pickle", "difflib", "sched", "heapq", "csv"]
QUERY = "How do I pretty-print JSON with sorted keys and an indent?"
BUDGET = 500


def documents() -> list[Document]:
    docs = []
    for name in MODULES:
        path = STDLIB / f"{name}.py"
        if not path.exists():
            path = STDLIB / name / "__init__.py"
        text = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
        docs.append(Document(text=text, metadata={"file_path": str(path), "module": name}))
    return docs


class WordsEmbedding(BaseEmbedding):
    """Hashed bag-of-words vectors: deterministic, offline, good enough to rank by topic."""

    dim: int = 256

    def _vector(self, text: str) -> list[float]:
        vec = [0.0] * self.dim
        for word in re.findall(r"[a-z]{3,}", text.lower()):
            vec[zlib.crc32(word.encode()) % self.dim] += 1.0
        norm = math.sqrt(sum(v * v for v in vec)) or 1.0
        return [v / norm for v in vec]

    def _get_query_embedding(self, query: str) -> list[float]:
        return self._vector(query)

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._vector(query)

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._vector(text)


class BudgetReport(BaseEventHandler):
    """Receives the TokenBudgetEvent each postprocessor call dispatches."""

    events: list[TokenBudgetEvent] = Field(default_factory=list)

    def handle(self, event: BaseEvent, **kwargs: Any) -> None:
        if isinstance(event, TokenBudgetEvent):
            self.events.append(event)


def main(max_tokens: int = BUDGET) -> dict[str, Any]:
    """Run the query; print and return what was retrieved, sent and left out."""
    index = VectorStoreIndex.from_documents(
        documents(),
        embed_model=WordsEmbedding(),
        transformations=[TokenTextSplitter(chunk_size=200, chunk_overlap=0)],
    )
    budget = TokenBudgetPostprocessor(max_tokens=max_tokens, counter="tiktoken:cl100k_base")
    engine = index.as_query_engine(llm=MockLLM(), similarity_top_k=10, node_postprocessors=[budget])

    report = BudgetReport()
    dispatcher = get_dispatcher()  # the root: sees every dispatcher's events
    dispatcher.add_event_handler(report)
    try:
        response = engine.query(QUERY)
    finally:
        dispatcher.event_handlers = [h for h in dispatcher.event_handlers if h is not report]

    counter = get_counter("tiktoken:cl100k_base")
    retrieved = index.as_retriever(similarity_top_k=10).retrieve(QUERY)
    everything = sum(counter.count(n.node.get_content(MetadataMode.LLM)) for n in retrieved)
    print(f"query: {QUERY}")
    print(f"retrieved {len(retrieved)} nodes: {everything:,} tokens as the LLM would see them")
    print(f"sent {len(response.source_nodes)} nodes within a {max_tokens:,}-token budget:")
    for n in response.source_nodes:
        tag = n.node.metadata["ragbudget"]
        print(
            f"  rank {tag['rank']}  score {n.score:.3f}  {tag['tokens']:>4} tokens"
            f"{'  (cut)' if tag['cut'] else ''}  {n.node.metadata['module']}"
        )
    (event,) = report.events
    info = event.info
    print(f"used {info.used_tokens:,} of {info.max_tokens:,} tokens ({info.counter})")
    print(f"notice: {event.info.notice(noun='nodes', offset_hint=None)}")
    context = str(response).split("---------------------")[1].strip()
    print(f"context in the prompt: {counter.count(context):,} tokens, starts:")
    print("  " + context[:160].replace("\n", "\n  "))

    # A budget smaller than the best node: its text is cut at a sentence boundary so the
    # header and the text together fit, with a visible marker.
    (cut,) = TokenBudgetPostprocessor(max_tokens=120, counter=counter).postprocess_nodes(retrieved)
    seen = cut.node.get_content(MetadataMode.LLM)
    tag = cut.node.metadata["ragbudget"]
    print(f"with max_tokens=120: 1 node, {counter.count(seen)} tokens, cut={tag['cut']}, ends:")
    print("  " + seen[-160:].replace("\n", "\n  "))
    return {
        "retrieved_tokens": everything,
        "sent": [n.node.metadata["ragbudget"] for n in response.source_nodes],
        "modules": [n.node.metadata["module"] for n in response.source_nodes],
        "info": info,
        "context_tokens": counter.count(context),
        "cut_tokens": counter.count(seen),
        "cut_text": cut.node.get_content(MetadataMode.NONE),
    }


if __name__ == "__main__":
    main()
