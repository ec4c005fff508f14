"""Parts the LlamaIndex plugin tests share: real text, a real embedding, an event handler.

(A uniquely named module, not conftest: the suite runs in pytest's default import mode.)
"""

from __future__ import annotations

import ast
import math
import re
import sysconfig
import zlib
from pathlib import Path

from llama_index.core import Document
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.instrumentation.event_handlers import BaseEventHandler
from llama_index.core.instrumentation.events import BaseEvent
from llama_index.core.schema import NodeWithScore, TextNode
from llama_index.postprocessor.ragbudget import TokenBudgetEvent
from pydantic import Field
from ragbudget import TokenCounter

DISPATCHER = "llama_index.postprocessor.ragbudget.base"
STDLIB = Path(sysconfig.get_paths()["stdlib"])

# Stdlib modules whose docstrings are long prose: real public text on every machine.
PROSE_MODULES = ("argparse", "json", "statistics", "sched", "difflib", "pickle", "heapq")


def module_docstring(name: str) -> str:
    path = STDLIB / f"{name}.py"
    if not path.exists():
        path = STDLIB / name / "__init__.py"
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
    assert doc, f"no docstring in {path}"
    return doc


def heapq_about() -> str:
    """heapq's `__about__`: ~3,000 characters of prose in sentences."""
    tree = ast.parse((STDLIB / "heapq.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "__about__":
            value = ast.literal_eval(node.value)
            assert isinstance(value, str)
            return value
    raise AssertionError("heapq.__about__ not found")


def stdlib_documents() -> list[Document]:
    """One Document per prose docstring, with the metadata a file loader would add."""
    docs = [
        Document(
            text=module_docstring(name),
            id_=f"doc-{name}",
            metadata={"file_path": str(STDLIB / f"{name}.py"), "module": name},
        )
        for name in PROSE_MODULES
    ]
    docs.append(
        Document(
            text=heapq_about(),
            id_="doc-heapq-about",
            metadata={"file_path": str(STDLIB / "heapq.py"), "module": "heapq.__about__"},
        )
    )
    return docs


class WordsEmbedding(BaseEmbedding):
    """A deterministic bag-of-words embedding (hashed word counts, unit length).

    MockEmbedding gives every text the same vector, so every score ties; this one gives
    real, distinct similarity scores offline.
    """

    dim: int = Field(default=256, description="Vector size.")

    @classmethod
    def class_name(cls) -> str:
        return "WordsEmbedding"

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


class BudgetEvents(BaseEventHandler):
    """Collects the TokenBudgetEvents it is sent, and how (sync `handle` or async `ahandle`)."""

    events: list[TokenBudgetEvent] = Field(default_factory=list)
    via: list[str] = Field(default_factory=list)

    @classmethod
    def class_name(cls) -> str:
        return "BudgetEvents"

    def handle(self, event: BaseEvent, **kwargs: object) -> None:
        if isinstance(event, TokenBudgetEvent):
            self.events.append(event)
            self.via.append("sync")

    async def ahandle(self, event: BaseEvent, **kwargs: object) -> None:
        if isinstance(event, TokenBudgetEvent):
            self.events.append(event)
            self.via.append("async")


def scored(text: str, score: float | None, node_id: str, **metadata: object) -> NodeWithScore:
    return NodeWithScore(
        node=TextNode(text=text, id_=node_id, metadata=dict(metadata)), score=score
    )


def llm_tokens(counter: TokenCounter, nws: NodeWithScore) -> int:
    """What the response synthesizers send for this node, counted."""
    from llama_index.core.schema import MetadataMode

    return counter.count(nws.node.get_content(metadata_mode=MetadataMode.LLM))


__all__ = [
    "DISPATCHER",
    "PROSE_MODULES",
    "STDLIB",
    "BudgetEvents",
    "WordsEmbedding",
    "heapq_about",
    "llm_tokens",
    "module_docstring",
    "scored",
    "stdlib_documents",
]
