"""`TokenBudgetRetriever`: any retriever, with its documents fitted into a token budget."""

from __future__ import annotations

from typing import Any

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever, RetrieverLike
from pydantic import ConfigDict, Field
from typing_extensions import override

from langchain_ragbudget._budget import BudgetOptions, check_k
from langchain_ragbudget._events import adispatch_truncation, dispatch_truncation

__all__ = ["TokenBudgetRetriever"]


class TokenBudgetRetriever(BudgetOptions, BaseRetriever):
    """Wraps a retriever so that what it returns always fits a token budget.

    It fetches from `base_retriever`, ranks the documents by score (highest first; documents
    without a score keep the base retriever's order, after scored ones), and keeps the best
    ones whose tokens fit `max_tokens`, counting each document as the model will see it
    (`document_formatter` plus `document_separator`). A single document larger than the
    whole budget is cut at a paragraph or sentence boundary with a visible marker, never
    silently. Nothing else is split.

    Setup:
        ```bash
        pip install langchain-ragbudget            # add 'ragbudget[tiktoken]' for exact counts
        ```

    Key init args:
        base_retriever: any retriever or `Runnable[str, list[Document]]`; fetch generously
            (e.g. `search_kwargs={"k": 20}`) and let the budget choose.
        max_tokens: the budget for all returned documents together (default 8192).
        counter: `None` (offline estimate), `"tiktoken:cl100k_base"`, `"hf:tokenizer.json"`,
            a `ragbudget.TokenCounter` or any `str -> int` callable.
        strategy: `"stop"` (keep the best up to the first that does not fit) or `"fill"`.
        oversize: `"truncate"` (cut a document larger than the budget) or `"drop"`.
        k: at most this many documents; also accepted per call as `invoke(query, k=3)`.
        score_key: metadata key of a higher-is-better score, or a callable `Document -> float`;
            by default `relevance_score`, `score` or `similarity_score`, whichever is present.
        document_formatter: the stuff chain's `document_prompt` (a `PromptTemplate`) or a
            callable `Document -> str`; `document_separator` defaults to `"\\n\\n"`.
        merge_adjacent, dedupe, snippets, max_per_source, mmr, embeddings: more evidence
            per token, all off by default (docs/langchain.md, "More evidence per token"):
            adjacent parts of one `source` merged, near-duplicates left out, best-matching
            lines of more Documents at a tight budget, a cap per source, an MMR order.

    Instantiate:
        ```python
        from langchain_core.documents import Document
        from langchain_core.embeddings import DeterministicFakeEmbedding
        from langchain_core.vectorstores import InMemoryVectorStore
        from langchain_ragbudget import TokenBudgetRetriever

        store = InMemoryVectorStore(DeterministicFakeEmbedding(size=64))
        store.add_documents([Document(page_content=f"note {i} " * 50) for i in range(20)])
        retriever = TokenBudgetRetriever(
            base_retriever=store.as_retriever(search_kwargs={"k": 20}),
            max_tokens=500,
        )
        ```

    Use:
        ```python
        docs = retriever.invoke("note 3")  # 3 of the 20: as many as fit 500 tokens
        docs[0].metadata["ragbudget"]      # {'tokens': 151, 'rank': 0, 'score': None, 'cut': False}
        retriever.invoke("note 3", k=2)    # at most 2
        ```

    Async:
        ```python
        docs = await retriever.ainvoke("note 3")  # awaits the base retriever's ainvoke
        ```

    More evidence per token (Documents from a splitter with `add_start_index=True`):
        ```python
        retriever = TokenBudgetRetriever(base_retriever=base, max_tokens=1000,
                                         merge_adjacent=True, dedupe=True, snippets=True)
        docs = retriever.invoke("how are retries configured")
        docs[0].metadata["ragbudget"]  # {..., 'cut': True, 'merged_ids': [...]}
        ```

    Events:
        Each call emits the custom event `"ragbudget_truncation"` (`TRUNCATION_EVENT`) whose
        data is the call's `ragbudget.TruncationInfo`: callback handlers get it in
        `on_custom_event`, and `astream_events(..., version="v2")` yields it as an
        `on_custom_event` event. Truncations are also logged (logger `ragbudget`, warning).

    Returned documents are copies: the base retriever's documents are never changed. Each copy
    has `metadata["ragbudget"] = {"tokens", "rank", "score", "cut"}`: its tokens as counted
    (rendered, separator included), its 0-based rank by score, the score read, and whether its
    content was cut to fit.
    """

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    base_retriever: RetrieverLike = Field(
        description="The retriever (or Runnable[str, list[Document]]) whose documents are fitted."
    )

    @override
    def _get_relevant_documents(
        self,
        query: str,
        *,
        run_manager: CallbackManagerForRetrieverRun,
        k: int | None = None,
        **kwargs: Any,
    ) -> list[Document]:
        limit = self._call_k(k)
        fetched = self.base_retriever.invoke(
            query, config={"callbacks": run_manager.get_child()}, **kwargs
        )
        docs, info = self._budget(fetched, limit, query)
        dispatch_truncation(info, run_manager.get_child())
        return docs

    @override
    async def _aget_relevant_documents(
        self,
        query: str,
        *,
        run_manager: AsyncCallbackManagerForRetrieverRun,
        k: int | None = None,
        **kwargs: Any,
    ) -> list[Document]:
        limit = self._call_k(k)
        fetched = await self.base_retriever.ainvoke(
            query, config={"callbacks": run_manager.get_child()}, **kwargs
        )
        docs, info = self._budget(fetched, limit, query)
        await adispatch_truncation(info, run_manager.get_child())
        return docs

    def _call_k(self, k: Any) -> int | None:
        return self.k if k is None else check_k(k)
