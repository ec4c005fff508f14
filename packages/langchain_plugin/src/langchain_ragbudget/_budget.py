"""The options both LangChain classes share, and the budgeting of a list of Documents."""

from __future__ import annotations

import logging
import math
import numbers
from collections.abc import Callable, Sequence
from copy import deepcopy
from typing import Any, Literal

from langchain_core.documents import Document
from langchain_core.prompts import BasePromptTemplate, format_document
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from ragbudget import Chunk, TokenCounter, TruncationInfo, fit, get_counter, rank_chunks
from ragbudget.evidence import dedupe, merge_adjacent
from ragbudget.exact import default_spec
from ragbudget.text import counted

from langchain_ragbudget._evidence import (
    POSITIONS,
    annotated_copy,
    diversified,
    position,
    select_documents,
)

__all__ = ["SCORE_KEYS", "BudgetOptions", "check_k"]

logger = logging.getLogger(__name__)

SCORE_KEYS: tuple[str, ...] = ("relevance_score", "score", "similarity_score")
"""Metadata keys read for a score, in this order, when `score_key` is not given: rerankers
(Cohere, FlashRank, cross-encoders) write `relevance_score`; LangChain's "add scores to
retriever results" recipe writes `score`."""

DocumentFormatter = BasePromptTemplate[str] | Callable[[Document], str]
ScoreKey = str | Callable[[Document], float | None]


def check_k(k: Any, *, name: str = "k") -> int | None:
    """`k` as given to invoke(): None or an int >= 1."""
    if k is None:
        return None
    if isinstance(k, bool) or not isinstance(k, int):
        msg = f"{name} must be an int >= 1 or None, got {k!r}"
        raise TypeError(msg)
    if k < 1:
        msg = f"{name} must be >= 1, got {k}"
        raise ValueError(msg)
    return k


class BudgetOptions(BaseModel):
    """What to keep and how to count it: shared by `TokenBudgetRetriever` and
    `TokenBudgetCompressor`."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    max_tokens: int = Field(
        default=8192,
        ge=0,
        strict=True,
        description="Token budget for all returned documents together, separators included.",
    )
    counter: Any = Field(
        default=None,
        description=(
            "Token counter spec for `ragbudget.get_counter`: None ('exact', the larger of the "
            "exact cl100k and o200k counts, when bpe-openai is installed, as with "
            "`ragbudget[bpe]`; else the offline estimate), 'estimate', "
            "'tiktoken:cl100k_base', 'hf:<tokenizer.json>', a TokenCounter or a callable "
            "str -> int."
        ),
    )
    strategy: Literal["stop", "fill"] = Field(
        default="stop",
        description=(
            "'stop' keeps the best documents up to the first one that does not fit; 'fill' also "
            "keeps lower-ranked ones that still fit."
        ),
    )
    oversize: Literal["truncate", "drop"] = Field(
        default="truncate",
        description=(
            "A document larger than the whole budget is cut at a paragraph/sentence boundary "
            "with a visible marker ('truncate') or left out ('drop')."
        ),
    )
    k: int | None = Field(
        default=None,
        ge=1,
        strict=True,
        description="At most this many documents (the best k by score); None for no cap.",
    )
    score_key: ScoreKey | None = Field(
        default=None,
        description=(
            "Metadata key holding a higher-is-better score, or a callable Document -> score "
            "(e.g. `lambda d: -d.metadata['distance']`). None reads the first of "
            "'relevance_score', 'score', 'similarity_score' found; documents without a score "
            "keep the base retriever's order, after the scored ones."
        ),
    )
    document_formatter: DocumentFormatter | None = Field(
        default=None,
        description=(
            "How the chain renders each document for the model: a PromptTemplate (such as a "
            "stuff-documents chain's `document_prompt`) or a callable Document -> str. The "
            "budget counts the rendered text. None counts `page_content`."
        ),
    )
    document_separator: str = Field(
        default="\n\n",
        description=(
            "What the chain puts between documents (LangChain's stuff-documents default is "
            "'\\n\\n'); counted once per document."
        ),
    )

    merge_adjacent: bool = Field(
        default=False,
        description=(
            "Merge documents that are adjacent or overlapping parts of one source (metadata "
            "'source' and 'start_index', as a splitter with add_start_index=True writes them) "
            "into one, the overlap once; the merged ids are in metadata['ragbudget']"
            "['merged_ids']. Pays with tight budgets only alongside cutting (see docs/evidence)."
        ),
    )
    dedupe: bool = Field(
        default=False,
        description=(
            "Leave out exact and near-duplicate texts (ragbudget.evidence.dedupe); their ids "
            "are in the kept copy's metadata['ragbudget']['duplicate_ids']."
        ),
    )

    snippets: bool = Field(
        default=False,
        description=(
            "When the best documents that fit whole are few (fewer than max_tokens // 100, at "
            "most 10), that many share the budget fairly and one larger than its share keeps "
            "its lines that best match the query (cut: true, start_index moved), instead of "
            "being dropped. Works with strategy='stop' and oversize='truncate' only."
        ),
    )
    max_per_source: int | None = Field(
        default=None,
        ge=1,
        strict=True,
        description=(
            "At most this many documents per metadata['source'] (after merging); the rest are "
            "left out (in the report's dropped_ids). None: no cap."
        ),
    )
    mmr: float | None = Field(
        default=None,
        ge=0.0,
        le=1.0,
        description=(
            "Maximal marginal relevance: the weight of relevance (0 to 1) against similarity "
            "to the documents already chosen; similarity is lexical unless `embeddings` is "
            "given. None: rank by score alone."
        ),
    )
    embeddings: Any = Field(
        default=None,
        description=(
            "A LangChain Embeddings object: with `mmr`, similarity is the cosine of its "
            "vectors of the documents' contents. None: lexical similarity."
        ),
    )

    @model_validator(mode="after")
    def _snippets_with_stop(self) -> BudgetOptions:
        if self.snippets and (self.strategy != "stop" or self.oversize != "truncate"):
            msg = (
                f"snippets=True budgets by fair shares and cuts documents to their best lines: "
                f"it needs strategy='stop' and oversize='truncate', got strategy="
                f"{self.strategy!r}, oversize={self.oversize!r} (or set snippets=False)"
            )
            raise ValueError(msg)
        return self

    @field_validator("embeddings")
    @classmethod
    def _valid_embeddings(cls, value: Any) -> Any:
        if value is not None and not callable(getattr(value, "embed_documents", None)):
            msg = (
                "embeddings must be a LangChain Embeddings object (with embed_documents) or "
                f"None, got {type(value).__name__}"
            )
            raise ValueError(msg)
        return value

    @field_validator("counter")
    @classmethod
    def _valid_counter(cls, value: Any) -> Any:
        try:
            get_counter(value)  # fail at construction; resolved per call (spec strings cached)
        except TypeError as exc:
            raise ValueError(str(exc)) from None
        return value

    @field_validator("score_key")
    @classmethod
    def _valid_score_key(cls, value: ScoreKey | None) -> ScoreKey | None:
        if isinstance(value, str) and not value:
            msg = "score_key must be a metadata key, a callable or None, got ''"
            raise ValueError(msg)
        return value

    # -- the parts ---------------------------------------------------------------------------

    def _render(self, doc: Document) -> str:
        """The text the model sees for `doc` (without the separator)."""
        formatter = self.document_formatter
        if formatter is None:
            return doc.page_content
        if isinstance(formatter, BasePromptTemplate):
            return format_document(doc, formatter)
        text = formatter(doc)
        if not isinstance(text, str):
            msg = f"document_formatter must return a str, got {type(text).__name__}"
            raise TypeError(msg)
        return text

    def _score(self, doc: Document, position: int) -> float | None:
        """The document's score (higher is better), or None when it has none."""
        key = self.score_key
        if callable(key):
            return _as_score(key(doc), f"score_key returned for document {position}")
        if isinstance(key, str):
            return _as_score(doc.metadata.get(key), f"metadata[{key!r}] of document {position}")
        for name in SCORE_KEYS:
            value = doc.metadata.get(name)
            if _is_number(value):
                return _as_score(value, name)
        return None

    # -- the budget --------------------------------------------------------------------------

    def _budget(
        self, documents: Any, k: int | None, query: str | None = None
    ) -> tuple[list[Document], TruncationInfo]:
        """The best documents that fit (copies, annotated) and what was left out; `query`
        chooses the lines snippets keep."""
        docs = _as_documents(documents)
        counter = get_counter(default_spec() if self.counter is None else self.counter)
        ids = _chunk_ids(docs)
        given = len(docs)
        docs, ids, folded = self._fold(docs, ids)
        chunks = [
            Chunk(id=ids[i], text=d.page_content, score=self._score(d, i))
            for i, d in enumerate(docs)
        ]
        if k is not None and k < len(chunks):
            chunks = [chunks[i] for i in sorted(rank_chunks(chunks)[:k])]
        if self.snippets:
            kept, info = select_documents(self, chunks, docs, ids, folded, query, counter)
        else:
            kept, info = self._fit(chunks, docs, ids, folded, counter)
        if folded:  # a left-out document takes the ids folded into it along
            out = [m for i in info.dropped_ids for m in [i, *_members(folded.get(i, {}))]]
            info = info.widened(original_count=given, dropped_ids=out)
        if given and not kept and self.max_tokens > 0:
            # No document fits: an empty list, as LangChain's filters return when nothing
            # passes; the report says so (truncated, reason 'token_budget', every id dropped).
            logger.warning(
                "max_tokens=%d holds none of the documents given (%s; oversize=%r): the result is "
                "empty; raise max_tokens (oversize='truncate' cuts a document to fit)",
                self.max_tokens, counted(given, "document"), self.oversize,
            )  # fmt: skip
        # A retriever's caller cannot ask for the next page: the report names no continuation,
        # so its notice says what was left out and nothing about an offset.
        return kept, info.model_copy(update={"next_offset": None})

    def _fit(
        self,
        chunks: list[Chunk],
        docs: list[Document],
        ids: list[str],
        folded: dict[str, dict[str, list[str]]],
        counter: TokenCounter,
    ) -> tuple[list[Document], TruncationInfo]:
        """`fit` over the documents' contents (capped and in MMR order first, as asked), each
        counted as rendered by the formatter, plus the separator; a document larger than the
        budget has its content cut so that its rendering fits."""
        scores = {c.id: c.score for c in chunks}
        capped: list[str] = []
        if self.max_per_source is not None or self.mmr is not None:
            chunks, capped = diversified(self, chunks, docs, ids)
        by_id = dict(zip(ids, docs, strict=True))

        def render(chunk: Chunk) -> str:
            doc = by_id[chunk.id]
            if chunk.text != doc.page_content:  # a cut: the content fit is trying
                doc = doc.model_copy(update={"page_content": chunk.text})
            return self._render(doc)

        result = fit(
            chunks,
            self.max_tokens,
            counter=counter,
            strategy=self.strategy,
            oversize=self.oversize,
            separator=self.document_separator,  # the context is counted as joined
            render=None if self.document_formatter is None else render,
        )
        cut_ids = set(result.info.cut_ids)
        kept = [
            annotated_copy(by_id[chunk.id], chunk.text,
                           {"tokens": tokens, "rank": rank, "score": scores[chunk.id],
                            "cut": chunk.id in cut_ids, **folded.get(chunk.id, {})})
            for chunk, tokens, rank in zip(result.chunks, result.tokens, result.ranks, strict=True)
        ]  # fmt: skip
        info = result.info
        if capped:  # left out by the cap before the fit, after what the budget left out
            info = info.widened(
                original_count=len(chunks) + len(capped), dropped_ids=[*info.dropped_ids, *capped]
            )
        return kept, info

    def _fold(
        self, docs: list[Document], ids: list[str]
    ) -> tuple[list[Document], list[str], dict[str, dict[str, list[str]]]]:
        """`docs` with duplicates left out and adjacent parts of a source merged (as asked),
        their ids, and for each remaining id the ids folded into it."""
        if not (self.merge_adjacent or self.dedupe):
            return docs, ids, {}
        chunks = [
            Chunk(id=i, text=d.page_content, metadata=position(d))
            for i, d in zip(ids, docs, strict=True)
        ]
        folded: dict[str, dict[str, list[str]]] = {}
        if self.dedupe:
            chunks, twins = dedupe(chunks)
            for gone, twin in twins.items():
                folded.setdefault(twin, {}).setdefault("duplicate_ids", []).append(gone)
        if self.merge_adjacent:
            chunks, merged = merge_adjacent(chunks, POSITIONS)
            for span, members in merged.items():
                into = folded.setdefault(span, {})
                for member in members:
                    for more in _members(folded.pop(member, {})):
                        into.setdefault("duplicate_ids", []).append(more)
                into["merged_ids"] = members
        by_id = dict(zip(ids, docs, strict=True))
        out = []
        for chunk in chunks:
            doc = by_id[chunk.id]
            if "merged_ids" in folded.get(chunk.id, {}):
                metadata = deepcopy(doc.metadata)
                metadata["start_index"] = chunk.metadata["start_index"]
                doc = doc.model_copy(update={"page_content": chunk.text, "metadata": metadata})
            out.append(doc)
        return out, [c.id for c in chunks], folded


def _members(folded: dict[str, list[str]]) -> list[str]:
    return [m for key in ("merged_ids", "duplicate_ids") for m in folded.get(key, [])]


def _is_number(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _as_score(value: Any, where: str) -> float | None:
    if value is None:
        return None
    if not _is_number(value):
        msg = f"score_key: {where} is {value!r}, not a number (give a key with numeric scores)"
        raise ValueError(msg)
    score = float(value)
    return None if math.isnan(score) else score


def _as_documents(documents: Any) -> list[Document]:
    if isinstance(documents, str | bytes | dict) or not isinstance(documents, Sequence):
        msg = (
            f"documents must be a list of Documents (e.g. a retriever's output), "
            f"got {type(documents).__name__}"
        )
        raise TypeError(msg)
    for i, doc in enumerate(documents):
        if not isinstance(doc, Document):
            msg = f"documents[{i}] must be a langchain Document, got {type(doc).__name__}"
            raise TypeError(msg)
    return list(documents)


def _chunk_ids(docs: list[Document]) -> list[str]:
    """The Documents' own ids when every one has a distinct id, else their positions."""
    ids = [doc.id for doc in docs]
    if all(ids) and len(set(ids)) == len(ids):
        return [str(i) for i in ids]
    return [str(i) for i in range(len(docs))]
