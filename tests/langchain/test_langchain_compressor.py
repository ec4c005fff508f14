"""TokenBudgetCompressor: in LCEL (`retriever | budget`) and as a BaseDocumentCompressor."""

from __future__ import annotations

import pytest
from _lc_parts import AsyncEventRecorder, EventRecorder, ScoredRetriever
from langchain_classic.retrievers import ContextualCompressionRetriever
from langchain_classic.retrievers.document_compressors import DocumentCompressorPipeline
from langchain_core.documents import BaseDocumentCompressor, Document
from langchain_core.runnables import Runnable, RunnableLambda
from langchain_core.vectorstores import InMemoryVectorStore
from langchain_ragbudget import TRUNCATION_EVENT, TokenBudgetCompressor, TokenBudgetRetriever

QUERY = "parse command line options and arguments"
EXACT = "tiktoken:cl100k_base"


@pytest.fixture
def base(memory_store: InMemoryVectorStore) -> ScoredRetriever:
    return ScoredRetriever(vectorstore=memory_store, k=12)


def test_it_is_a_compressor_and_a_runnable() -> None:
    budget = TokenBudgetCompressor(max_tokens=500)
    assert isinstance(budget, BaseDocumentCompressor)
    assert isinstance(budget, Runnable)
    assert budget.get_name() == "TokenBudgetCompressor"


def test_retriever_pipe_budget_matches_the_wrapper(base: ScoredRetriever) -> None:
    budget = TokenBudgetCompressor(max_tokens=400, counter=EXACT)
    chain = base | budget
    recorder = EventRecorder()
    piped = chain.invoke(QUERY, config={"callbacks": [recorder]})
    wrapped = TokenBudgetRetriever(base_retriever=base, max_tokens=400, counter=EXACT).invoke(QUERY)
    assert piped == wrapped
    assert 0 < len(piped) < 12
    [(name, info, _)] = recorder.events
    assert (name, info.returned_count, info.original_count) == (TRUNCATION_EVENT, len(piped), 12)


async def test_async_pipe_and_astream_events(base: ScoredRetriever) -> None:
    chain = base | TokenBudgetCompressor(max_tokens=400, counter=EXACT)
    recorder = AsyncEventRecorder()
    docs = await chain.ainvoke(QUERY, config={"callbacks": [recorder]})
    assert recorder.events[-1][1].returned_count == len(docs)
    events = [e async for e in chain.astream_events(QUERY, version="v2")]
    custom = [e for e in events if e["event"] == "on_custom_event"]
    assert [(e["name"], e["data"].returned_count) for e in custom] == [
        (TRUNCATION_EVENT, len(docs))
    ]
    assert base.async_calls == 2


def test_batch_and_a_per_call_k(base: ScoredRetriever) -> None:
    budget = TokenBudgetCompressor(max_tokens=3000)
    fetched = base.batch([QUERY, "compress data with zlib"])
    outs = budget.batch(fetched)
    assert outs == [budget.invoke(f) for f in fetched]
    assert all(0 < len(o) < len(f) for o, f in zip(outs, fetched, strict=True))
    assert [d.id for d in budget.invoke(fetched[0], k=2)] == [d.id for d in fetched[0][:2]]
    with pytest.raises(TypeError, match="unexpected arguments: top_n"):
        budget.invoke(fetched[0], top_n=2)


def test_input_must_be_documents() -> None:
    budget = TokenBudgetCompressor()
    with pytest.raises(TypeError, match="documents must be a list of Documents"):
        budget.invoke("a query string")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"documents\[1\] must be a langchain Document"):
        budget.invoke([Document(page_content="a"), "b"])  # type: ignore[list-item]


def test_piped_after_a_lambda_in_a_larger_chain(base: ScoredRetriever) -> None:
    chain = (
        base
        | TokenBudgetCompressor(max_tokens=300)
        | RunnableLambda(lambda docs: "\n\n".join(d.page_content for d in docs))
    )
    context = chain.invoke(QUERY)
    assert isinstance(context, str)
    assert context


def test_in_a_contextual_compression_retriever_sync(base: ScoredRetriever) -> None:
    retriever = ContextualCompressionRetriever(
        base_compressor=TokenBudgetCompressor(max_tokens=400, counter=EXACT, k=3),
        base_retriever=base,
    )
    recorder = EventRecorder()
    docs = retriever.invoke(QUERY, config={"callbacks": [recorder]})
    assert 0 < len(docs) <= 3
    [(name, info, run_id)] = recorder.events
    assert name == TRUNCATION_EVENT
    assert info.original_count == 3  # k caps before the budget
    assert run_id == recorder.retriever_runs["ContextualCompressionRetriever"]


def test_last_in_a_document_compressor_pipeline(base: ScoredRetriever) -> None:
    pipeline = DocumentCompressorPipeline(
        transformers=[TokenBudgetCompressor(max_tokens=600, counter=EXACT)]
    )
    retriever = ContextualCompressionRetriever(base_compressor=pipeline, base_retriever=base)
    recorder = EventRecorder()
    docs = retriever.invoke(QUERY, config={"callbacks": [recorder]})
    assert docs
    assert sum(d.metadata["ragbudget"]["tokens"] for d in docs) <= 600
    [(name, info, _)] = recorder.events
    assert name == TRUNCATION_EVENT
    assert info.returned_count == len(docs)


async def test_in_a_contextual_compression_retriever_async(base: ScoredRetriever) -> None:
    retriever = ContextualCompressionRetriever(
        base_compressor=TokenBudgetCompressor(max_tokens=400, counter=EXACT), base_retriever=base
    )
    recorder = AsyncEventRecorder()
    docs = await retriever.ainvoke(QUERY, config={"callbacks": [recorder]})
    [(_, info, _)] = recorder.events
    assert info.returned_count == len(docs)
    assert info.truncated


def test_compress_documents_outside_a_run(base: ScoredRetriever) -> None:
    docs = base.invoke(QUERY)
    budget = TokenBudgetCompressor(max_tokens=300)
    kept = budget.compress_documents(docs, QUERY)  # no callbacks: nothing to tell, no error
    recorder = EventRecorder()
    again = budget.compress_documents(docs, QUERY, callbacks=[recorder])
    assert again == kept
    assert recorder.events[-1][1].returned_count == len(kept)


async def test_acompress_documents_with_async_handlers(base: ScoredRetriever) -> None:
    docs = await base.ainvoke(QUERY)
    recorder = AsyncEventRecorder()
    kept = await TokenBudgetCompressor(max_tokens=300).acompress_documents(
        docs, QUERY, callbacks=[recorder]
    )
    assert recorder.events[-1][1].returned_count == len(kept)
