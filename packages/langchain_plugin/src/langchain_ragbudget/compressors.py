"""`TokenBudgetCompressor`: the budget as a document compressor and as an LCEL step."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.callbacks import (
    AsyncCallbackManagerForChainRun,
    CallbackManagerForChainRun,
    Callbacks,
)
from langchain_core.documents import BaseDocumentCompressor, Document
from langchain_core.runnables import RunnableConfig, RunnableSerializable
from pydantic import ConfigDict
from typing_extensions import override

from langchain_ragbudget._budget import BudgetOptions, check_k
from langchain_ragbudget._events import adispatch_truncation, dispatch_truncation

__all__ = ["TokenBudgetCompressor"]


class TokenBudgetCompressor(
    BudgetOptions,
    BaseDocumentCompressor,
    RunnableSerializable[Sequence[Document], list[Document]],
):
    """Keeps the best documents that fit a token budget: a compressor and an LCEL step.

    The same options and behaviour as `TokenBudgetRetriever`, for code that composes rather
    than wraps: pipe a retriever into it (`retriever | budget`), or give it to a
    `ContextualCompressionRetriever` / `DocumentCompressorPipeline` (from `langchain-classic`)
    as a `BaseDocumentCompressor`. The query is not needed to budget: documents are ranked by
    their metadata score (else kept in the order given); only `snippets` reads the query.

    Setup:
        ```bash
        pip install langchain-ragbudget            # add 'ragbudget[tiktoken]' for exact counts
        ```

    Key init args:
        max_tokens, counter, strategy, oversize, k, score_key, document_formatter,
        document_separator, merge_adjacent, dedupe, snippets, max_per_source, mmr,
        embeddings: as for `TokenBudgetRetriever`. Snippets use the query that
        `compress_documents` is given; as an LCEL step there is none (first lines).

    Instantiate:
        ```python
        from langchain_ragbudget import TokenBudgetCompressor

        budget = TokenBudgetCompressor(max_tokens=3000, counter="tiktoken:cl100k_base")
        ```

    Use (LCEL):
        ```python
        chain = vectorstore.as_retriever(search_kwargs={"k": 20}) | budget
        docs = chain.invoke("how do I configure logging?")
        budget.invoke(docs, k=3)  # a list of Documents in, the best 3 that fit out
        ```

    Use (compressor):
        ```python
        from langchain_classic.retrievers import ContextualCompressionRetriever

        retriever = ContextualCompressionRetriever(base_compressor=budget, base_retriever=base)
        budget.compress_documents(docs, query="unused")
        ```

    Async:
        ```python
        docs = await chain.ainvoke("how do I configure logging?")
        docs = await budget.acompress_documents(docs, query="unused")
        ```

    Events:
        Each call emits the custom event `"ragbudget_truncation"` with the call's
        `ragbudget.TruncationInfo`, to the callbacks of the run (LCEL) or those passed to
        `compress_documents(..., callbacks=...)`; with no callbacks it is only logged.
    """

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    # -- BaseDocumentCompressor ----------------------------------------------------------------

    @override
    def compress_documents(
        self,
        documents: Sequence[Document],
        query: str,
        callbacks: Callbacks | None = None,
    ) -> Sequence[Document]:
        """The best `documents` that fit the budget (copies); with `snippets`, `query` chooses
        the lines a cut document keeps."""
        docs, info = self._budget(documents, self.k, query)
        dispatch_truncation(info, callbacks)
        return docs

    @override
    async def acompress_documents(
        self,
        documents: Sequence[Document],
        query: str,
        callbacks: Callbacks | None = None,
    ) -> Sequence[Document]:
        """Async `compress_documents`: awaits async callback handlers."""
        docs, info = self._budget(documents, self.k, query)
        await adispatch_truncation(info, callbacks)
        return docs

    # -- Runnable ------------------------------------------------------------------------------

    @override
    def invoke(
        self,
        input: Sequence[Document],
        config: RunnableConfig | None = None,
        **kwargs: Any,
    ) -> list[Document]:
        """Budget a list of Documents (what a retriever returns); `k=` caps this call."""
        limit = self._call_k(**kwargs)

        def run(
            docs: Sequence[Document], run_manager: CallbackManagerForChainRun
        ) -> list[Document]:
            kept, info = self._budget(docs, limit)
            dispatch_truncation(info, run_manager.get_child())
            return kept

        return self._call_with_config(run, input, config)

    @override
    async def ainvoke(
        self,
        input: Sequence[Document],
        config: RunnableConfig | None = None,
        **kwargs: Any,
    ) -> list[Document]:
        """Async `invoke`: budgets in the event loop and awaits async callback handlers."""
        limit = self._call_k(**kwargs)

        async def run(
            docs: Sequence[Document], run_manager: AsyncCallbackManagerForChainRun
        ) -> list[Document]:
            kept, info = self._budget(docs, limit)
            await adispatch_truncation(info, run_manager.get_child())
            return kept

        return await self._acall_with_config(run, input, config)

    def _call_k(self, k: Any = None, **unknown: Any) -> int | None:
        if unknown:
            msg = f"TokenBudgetCompressor.invoke() got unexpected arguments: {', '.join(unknown)}"
            raise TypeError(msg)
        return self.k if k is None else check_k(k)
