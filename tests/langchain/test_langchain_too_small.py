"""A budget too small for any document: an empty list, the reason in the report, one WARNING.

The choice (docs/langchain.md): LangChain's filters and compressors return [] when nothing
passes and chains run on an empty context, so a retriever that raises mid-chain on a small
budget would break an agent over one large document; the `ragbudget_truncation` event carries
why (truncated, reason 'token_budget', every id dropped) and a WARNING says what to fix.
"""

from __future__ import annotations

import logging

import pytest
from _lc_parts import AsyncEventRecorder, EventRecorder
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableLambda
from langchain_ragbudget import TRUNCATION_EVENT, TokenBudgetCompressor, TokenBudgetRetriever
from ragbudget import TruncationInfo

EXACT = "tiktoken:cl100k_base"
DOCS = [
    Document("alpha " * 40, id="a", metadata={"score": 0.9}),
    Document("beta " * 50, id="b", metadata={"score": 0.5}),
]


class _Fixed(BaseRetriever):
    """Returns DOCS for any query."""

    def _get_relevant_documents(self, query: str, *, run_manager: object) -> list[Document]:
        return [d.model_copy() for d in DOCS]


def _small(oversize: str) -> int:
    # 1 token holds not even the cut marker; with "drop", 20 hold neither whole document
    return 1 if oversize == "truncate" else 20


def _check(events: list[tuple[str, object, object]], caplog: pytest.LogCaptureFixture) -> None:
    [(name, info, _)] = events
    assert name == TRUNCATION_EVENT and isinstance(info, TruncationInfo)
    assert (info.truncated, info.reason, info.returned_count) == (True, "token_budget", 0)
    assert sorted(info.dropped_ids) == ["a", "b"]
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1, warnings
    assert (
        "holds none of the documents given (2 documents;" in warnings[0]
        and "raise max_tokens" in warnings[0]
    )


@pytest.mark.parametrize("oversize", ["truncate", "drop"])
def test_retriever_returns_an_empty_list_and_says_why(
    oversize: str, caplog: pytest.LogCaptureFixture
) -> None:
    retriever = TokenBudgetRetriever(
        base_retriever=_Fixed(), max_tokens=_small(oversize), counter=EXACT, oversize=oversize
    )
    recorder = EventRecorder()
    with caplog.at_level(logging.WARNING):
        assert retriever.invoke("q", config={"callbacks": [recorder]}) == []
    _check(recorder.events, caplog)


@pytest.mark.parametrize("oversize", ["truncate", "drop"])
async def test_compressor_returns_an_empty_list_and_says_why_async_too(
    oversize: str, caplog: pytest.LogCaptureFixture
) -> None:
    budget = TokenBudgetCompressor(max_tokens=_small(oversize), counter=EXACT, oversize=oversize)
    chain = RunnableLambda(lambda _: [d.model_copy() for d in DOCS]) | budget
    recorder = AsyncEventRecorder()
    with caplog.at_level(logging.WARNING):
        assert await chain.ainvoke("q", config={"callbacks": [recorder]}) == []
    _check(recorder.events, caplog)
    caplog.clear()
    sync = EventRecorder()
    with caplog.at_level(logging.WARNING):
        assert budget.compress_documents(DOCS, "q", callbacks=[sync]) == []
    _check(sync.events, caplog)
    assert [d.page_content for d in DOCS] == ["alpha " * 40, "beta " * 50]  # not mutated


def test_a_zero_budget_asks_for_nothing_and_warns_of_nothing(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING):
        assert TokenBudgetCompressor(max_tokens=0).compress_documents(DOCS, "q") == []
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


def test_the_warning_counts_one_document_in_the_singular(caplog: pytest.LogCaptureFixture) -> None:
    compressor = TokenBudgetCompressor(max_tokens=1, counter=EXACT)
    with caplog.at_level(logging.WARNING):
        assert compressor.compress_documents([DOCS[0].model_copy()], "q") == []
    [warning] = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert "(1 document;" in warning, warning
