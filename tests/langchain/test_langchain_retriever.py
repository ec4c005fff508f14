"""TokenBudgetRetriever over real stores with an exact counter."""

from __future__ import annotations

import ast
import copy
import logging
import re
import textwrap
import uuid
from pathlib import Path
from typing import Any

import chromadb
import pytest
from _lc_parts import (
    AsyncEventRecorder,
    AsyncOnlyRetriever,
    EventRecorder,
    HashingEmbedding,
    ListRetriever,
    ScoredRetriever,
)
from langchain_chroma import Chroma
from langchain_core.documents import Document
from langchain_core.prompts import PromptTemplate, format_document
from langchain_core.runnables import chain
from langchain_core.vectorstores import InMemoryVectorStore
from langchain_ragbudget import SCORE_KEYS, TRUNCATION_EVENT, TokenBudgetRetriever
from pydantic import ValidationError
from ragbudget import TokenCounter, TruncationInfo, get_counter
from ragbudget.exact import default_spec

QUERY = "parse command line options and arguments"
EXACT = "tiktoken:cl100k_base"
SEP = "\n\n"


def _cost(doc: Document, counter: TokenCounter, prompt: PromptTemplate | None = None) -> int:
    text = doc.page_content if prompt is None else format_document(doc, prompt)
    return counter.count(text + SEP)


def _best_prefix(costs: list[int], budget: int) -> int:
    used = n = 0
    for cost in costs:
        if used + cost > budget:
            break
        used, n = used + cost, n + 1
    return n


def _docs(n: int, words: int = 40, **metadata_of: Any) -> list[Document]:
    text = "The quick brown fox jumps over the lazy dog near the river bank. "
    return [
        Document(
            id=f"d{i}",
            page_content=f"Document {i}. " + text * (words // 13 + 1),
            metadata={k: v[i] for k, v in metadata_of.items()},
        )
        for i in range(n)
    ]


# -- the budget ---------------------------------------------------------------------------------


def test_truncation_keeps_the_best_prefix_within_an_exact_budget(
    memory_store: InMemoryVectorStore, cl100k: TokenCounter
) -> None:
    base = ScoredRetriever(vectorstore=memory_store, k=20)
    fetched = base.invoke(QUERY)
    costs = [_cost(d, cl100k) for d in fetched]
    budget = sum(costs) // 3
    n = _best_prefix(costs, budget)
    assert 0 < n < len(fetched)

    docs = TokenBudgetRetriever(base_retriever=base, max_tokens=budget, counter=EXACT).invoke(QUERY)

    assert [d.id for d in docs] == [d.id for d in fetched[:n]]
    assert [d.metadata["ragbudget"]["tokens"] for d in docs] == costs[:n]
    assert [d.metadata["ragbudget"]["rank"] for d in docs] == list(range(n))
    assert [d.metadata["ragbudget"]["score"] for d in docs] == [
        d.metadata["score"] for d in fetched[:n]
    ]
    assert not any(d.metadata["ragbudget"]["cut"] for d in docs)
    # What the model sees, joined as a stuff chain joins it, is within the budget.
    assert cl100k.count(SEP.join(d.page_content for d in docs)) <= budget


def test_fill_also_keeps_smaller_lower_ranked_documents(cl100k: TokenCounter) -> None:
    sizes = [40, 400, 40, 40]
    docs = [_docs(1, words=w)[0].model_copy(update={"id": f"d{i}"}) for i, w in enumerate(sizes)]
    base = ListRetriever(docs=docs)
    costs = [_cost(d, cl100k) for d in docs]
    budget = costs[0] + costs[2] + costs[3]
    stop = TokenBudgetRetriever(base_retriever=base, max_tokens=budget, counter=EXACT)
    fill = stop.model_copy(update={"strategy": "fill"})
    assert [d.id for d in stop.invoke("q")] == ["d0"]
    assert [d.id for d in fill.invoke("q")] == ["d0", "d2", "d3"]


@pytest.mark.parametrize("key", SCORE_KEYS)
def test_ranks_by_the_usual_score_keys_not_retriever_order(key: str) -> None:
    scores = [0.2, 0.9, None, 0.5, 0.7]
    docs = _docs(5, **{key: scores})
    out = TokenBudgetRetriever(base_retriever=ListRetriever(docs=docs)).invoke("q")
    # Scored first, best first; the unscored one after them.
    assert [d.id for d in out] == ["d1", "d4", "d3", "d0", "d2"]
    assert [d.metadata["ragbudget"]["score"] for d in out] == [0.9, 0.7, 0.5, 0.2, None]


def test_explicit_score_key_and_a_callable_for_distances() -> None:
    docs = _docs(4, bm25=[1.0, 7.5, 3.0, 2.0], distance=[0.9, 0.1, 0.5, 0.3])
    base = ListRetriever(docs=docs)
    by_key = TokenBudgetRetriever(base_retriever=base, score_key="bm25").invoke("q")
    assert [d.id for d in by_key] == ["d1", "d2", "d3", "d0"]
    nearest = TokenBudgetRetriever(
        base_retriever=base, score_key=lambda d: -d.metadata["distance"]
    ).invoke("q")
    assert [d.id for d in nearest] == ["d1", "d3", "d2", "d0"]


def test_bad_scores_are_named_or_skipped() -> None:
    docs = _docs(2, relevance_score=["high", "low"], score=[0.1, 0.8])
    base = ListRetriever(docs=docs)
    with pytest.raises(ValueError, match=r"score_key: metadata\['relevance_score'\]"):
        TokenBudgetRetriever(base_retriever=base, score_key="relevance_score").invoke("q")
    # Without score_key a non-numeric usual key is skipped for the next one.
    out = TokenBudgetRetriever(base_retriever=base).invoke("q")
    assert [d.id for d in out] == ["d1", "d0"]


def test_documents_without_scores_keep_the_retriever_order(
    memory_store: InMemoryVectorStore, cl100k: TokenCounter
) -> None:
    base = memory_store.as_retriever(search_kwargs={"k": 12})
    fetched = base.invoke(QUERY)
    budget = sum(_cost(d, cl100k) for d in fetched[:5])
    docs = TokenBudgetRetriever(base_retriever=base, max_tokens=budget, counter=EXACT).invoke(QUERY)
    assert [d.id for d in docs] == [d.id for d in fetched[:5]]
    assert all(d.metadata["ragbudget"]["score"] is None for d in docs)


def test_an_oversized_top_document_is_cut_to_fit(
    stdlib: Path, stdlib_docs: list[Document], embedding: HashingEmbedding, cl100k: TokenCounter
) -> None:
    source = (stdlib / "argparse.py").read_text(encoding="utf-8")
    bomb = Document(id="argparse-source", page_content=source, metadata={"source": "argparse.py"})
    store = InMemoryVectorStore(embedding)
    store.add_documents([*stdlib_docs, bomb])
    base = ScoredRetriever(vectorstore=store, k=6)
    assert base.invoke(source)[0].id == bomb.id  # the context bomb ranks first
    recorder = EventRecorder()

    retriever = TokenBudgetRetriever(base_retriever=base, max_tokens=1000, counter=EXACT)
    docs = retriever.invoke(source, config={"callbacks": [recorder]})

    top = docs[0]
    assert top.id == bomb.id
    assert top.metadata["ragbudget"]["cut"] is True
    assert top.page_content.endswith("tokens in full]")
    assert "cut to fit a 1,000-token limit" in top.page_content
    assert source.startswith(top.page_content.split("\n[... cut")[0])
    assert sum(d.metadata["ragbudget"]["tokens"] for d in docs) <= 1000
    assert _cost(top, cl100k) == top.metadata["ragbudget"]["tokens"]
    info = recorder.events[-1][1]
    assert info.cut_ids == [bomb.id]
    assert info.reason == "token_budget"
    assert info.used_tokens == sum(d.metadata["ragbudget"]["tokens"] for d in docs)
    assert bomb.page_content == source  # the caller's document is untouched

    dropped = retriever.model_copy(update={"oversize": "drop"}).invoke(source)
    assert bomb.id not in [d.id for d in dropped]
    assert dropped, "the documents after the oversized one still fit"


def test_a_prompt_template_formatter_is_counted_with_separators(
    memory_store: InMemoryVectorStore, cl100k: TokenCounter
) -> None:
    prompt = PromptTemplate.from_template("Source: {source}\nContent: {page_content}")
    base = ScoredRetriever(vectorstore=memory_store, k=20)
    fetched = base.invoke(QUERY)
    costs = [_cost(d, cl100k, prompt) for d in fetched]
    budget = sum(costs) // 2
    plain_n = _best_prefix([_cost(d, cl100k) for d in fetched], budget)
    n = _best_prefix(costs, budget)

    docs = TokenBudgetRetriever(
        base_retriever=base, max_tokens=budget, counter=EXACT, document_formatter=prompt
    ).invoke(QUERY)

    assert len(docs) == n <= plain_n
    assert [d.metadata["ragbudget"]["tokens"] for d in docs] == costs[:n]
    stuffed = SEP.join(format_document(d, prompt) for d in docs)  # as a stuff chain renders
    assert cl100k.count(stuffed) <= budget


def test_a_cut_document_fits_once_formatted(cl100k: TokenCounter) -> None:
    doc = _docs(1, words=2000, source=["big.txt"])[0]
    prompt = PromptTemplate.from_template("<doc source='{source}'>\n{page_content}\n</doc>")
    out = TokenBudgetRetriever(
        base_retriever=ListRetriever(docs=[doc]),
        max_tokens=120,
        counter=EXACT,
        document_formatter=prompt,
    ).invoke("q")
    assert len(out) == 1
    assert out[0].metadata["ragbudget"]["cut"] is True
    rendered = format_document(out[0], prompt)
    assert rendered.endswith("tokens in full]\n</doc>")
    assert cl100k.count(rendered + SEP) == out[0].metadata["ragbudget"]["tokens"] <= 120


def test_a_document_whose_frame_alone_exceeds_the_budget_is_left_out() -> None:
    header = "Retrieved from the archive; cite the source and date when quoting. " * 5
    docs = _docs(1, words=600, score=[1.0])
    recorder = EventRecorder()
    out = TokenBudgetRetriever(
        base_retriever=ListRetriever(docs=docs),
        max_tokens=40,
        counter=EXACT,
        document_formatter=lambda d: header + d.page_content,
    ).invoke("q", config={"callbacks": [recorder]})
    assert out == []
    info = recorder.events[-1][1]
    assert (info.returned_count, info.dropped_ids, info.cut_ids) == (0, ["d0"], [])
    assert (info.truncated, info.reason, info.used_tokens) == (True, "token_budget", 0)


def test_the_counter_is_the_one_configured_now() -> None:
    docs = _docs(3)
    retriever = TokenBudgetRetriever(base_retriever=ListRetriever(docs=docs))
    chars = retriever.model_copy(update={"counter": "chars:1"})
    assert [d.metadata["ragbudget"]["tokens"] for d in chars.invoke("q")] == [
        len(d.page_content + SEP) for d in docs
    ]
    assert [d.metadata["ragbudget"]["tokens"] for d in retriever.invoke("q")] == [
        get_counter(default_spec()).count(d.page_content + SEP) for d in docs
    ]


def test_a_callable_formatter_must_return_text() -> None:
    base = ListRetriever(docs=_docs(3))
    upper = TokenBudgetRetriever(base_retriever=base, document_formatter=lambda d: d.id.upper())
    assert [d.metadata["ragbudget"]["tokens"] for d in upper.invoke("q")] == [
        get_counter(default_spec()).count(f"D{i}{SEP}") for i in range(3)
    ]
    broken = TokenBudgetRetriever(base_retriever=base, document_formatter=lambda d: 42)
    with pytest.raises(TypeError, match="document_formatter must return a str, got int"):
        broken.invoke("q")


# -- calls, k, copies, ids ----------------------------------------------------------------------


def test_empty_results_return_an_empty_list_and_say_so() -> None:
    recorder = EventRecorder()
    out = TokenBudgetRetriever(base_retriever=ListRetriever(docs=[])).invoke(
        "q", config={"callbacks": [recorder]}
    )
    assert out == []
    [(name, info, _)] = recorder.events
    assert name == TRUNCATION_EVENT
    assert (info.original_count, info.returned_count, info.truncated) == (0, 0, False)


def test_k_in_the_constructor_and_per_call() -> None:
    base = ListRetriever(docs=_docs(8, score=[0.1 * i for i in range(8)]))
    retriever = TokenBudgetRetriever(base_retriever=base, k=3)
    assert [d.id for d in retriever.invoke("q")] == ["d7", "d6", "d5"]
    assert [d.id for d in retriever.invoke("q", k=1)] == ["d7"]
    assert len(TokenBudgetRetriever(base_retriever=base).invoke("q", k=5)) == 5
    for bad, error in ((0, ValueError), ("3", TypeError), (True, TypeError)):
        with pytest.raises(error, match="k must be"):
            retriever.invoke("q", k=bad)


async def test_k_caps_before_the_budget_and_async_agrees(cl100k: TokenCounter) -> None:
    docs = _docs(6, words=60, score=[0.6, 0.5, 0.4, 0.3, 0.2, 0.1])
    cost = _cost(docs[0], cl100k)
    retriever = TokenBudgetRetriever(
        base_retriever=ListRetriever(docs=docs), max_tokens=cost * 4, counter=EXACT
    )
    recorder = AsyncEventRecorder()
    out = await retriever.ainvoke("q", config={"callbacks": [recorder]}, k=2)
    assert [d.id for d in out] == ["d0", "d1"]
    info = recorder.events[-1][1]
    assert (info.original_count, info.truncated) == (2, False)
    assert [d.id for d in retriever.invoke("q")] == ["d0", "d1", "d2", "d3"]


def test_kwargs_reach_the_base_retriever(memory_store: InMemoryVectorStore) -> None:
    retriever = TokenBudgetRetriever(
        base_retriever=memory_store.as_retriever(search_kwargs={"k": 10})
    )
    docs = retriever.invoke(QUERY, filter=lambda d: d.metadata["source"].startswith("s"), k=3)
    assert len(docs) == 3
    assert all(d.metadata["source"].startswith("s") for d in docs)


async def test_any_runnable_retriever_recipe_is_a_base(memory_store: InMemoryVectorStore) -> None:
    @chain
    def scored(query: str) -> list[Document]:  # LangChain's "add scores" recipe, as documented
        hits = memory_store.similarity_search_with_score(query, k=10)
        return [d.model_copy(update={"metadata": {**d.metadata, "score": s}}) for d, s in hits]

    retriever = TokenBudgetRetriever(base_retriever=scored, max_tokens=800, counter=EXACT)
    docs = retriever.invoke(QUERY)
    assert docs == await retriever.ainvoke(QUERY)
    assert 0 < len(docs) < 10
    assert [d.metadata["ragbudget"]["rank"] for d in docs] == list(range(len(docs)))
    with pytest.raises(ValidationError, match="base_retriever"):
        TokenBudgetRetriever(base_retriever=memory_store)


def test_returned_documents_are_annotated_copies(cl100k: TokenCounter) -> None:
    docs = _docs(5, words=80, score=[0.5, 0.4, 0.3, 0.2, 0.1], tags=[["a"]] * 5)
    before = copy.deepcopy(docs)
    out = TokenBudgetRetriever(
        base_retriever=ListRetriever(docs=docs), max_tokens=_cost(docs[0], cl100k), counter=EXACT
    ).invoke("q")
    assert out[0] is not docs[0]
    out[0].metadata["tags"].append("changed")
    assert docs == before
    assert all("ragbudget" not in d.metadata for d in docs)


def test_ids_are_the_documents_own_else_positions() -> None:
    recorder = EventRecorder()
    scores = [0.9, 0.8, 0.7]
    unique = _docs(3, words=400, score=scores)
    TokenBudgetRetriever(
        base_retriever=ListRetriever(docs=unique), max_tokens=200, counter=EXACT
    ).invoke("q", config={"callbacks": [recorder]})
    assert recorder.events[-1][1].dropped_ids == ["d1", "d2"]

    twins = [d.model_copy(update={"id": "same"}) for d in unique]
    kept = TokenBudgetRetriever(
        base_retriever=ListRetriever(docs=twins), max_tokens=200, counter=EXACT
    ).invoke("q", config={"callbacks": [recorder]})
    assert recorder.events[-1][1].dropped_ids == ["1", "2"]
    assert kept[0].id == "same"


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"max_tokens": -1}, "max_tokens"),
        ({"max_tokens": "100"}, "max_tokens"),
        ({"strategy": "best"}, "strategy"),
        ({"oversize": "split"}, "oversize"),
        ({"counter": 3.5}, "counter"),
        ({"counter": "nope:x"}, "counter"),
        ({"k": 0}, "k"),
        ({"score_key": ""}, "score_key"),
        ({"document_formatter": "{page_content}"}, "document_formatter"),
        ({"max_token": 10}, "max_token"),
    ],
)
def test_bad_options_name_the_argument(options: dict[str, Any], field: str) -> None:
    with pytest.raises(ValidationError, match=field):
        TokenBudgetRetriever(base_retriever=ListRetriever(docs=[]), **options)


# -- events, logs, async ------------------------------------------------------------------------


def test_the_event_reaches_a_callback_handler_from_this_run(
    memory_store: InMemoryVectorStore,
) -> None:
    recorder = EventRecorder()
    retriever = TokenBudgetRetriever(
        base_retriever=ScoredRetriever(vectorstore=memory_store, k=10), max_tokens=300
    )
    docs = retriever.invoke(QUERY, config={"callbacks": [recorder]})
    [(name, info, run_id)] = recorder.events
    assert name == TRUNCATION_EVENT
    assert isinstance(info, TruncationInfo)
    assert info.truncated
    assert info.returned_count == len(docs)
    assert info.original_count == 10
    assert info.used_tokens == sum(d.metadata["ragbudget"]["tokens"] for d in docs) <= 300
    assert not set(info.dropped_ids) & {d.id for d in docs}
    assert len(info.dropped_ids) + info.returned_count == info.original_count
    assert run_id == recorder.retriever_runs["TokenBudgetRetriever"]


async def test_async_awaits_the_base_retriever_and_its_handlers() -> None:
    docs = _docs(4, words=200, score=[0.1, 0.4, 0.3, 0.2])
    retriever = TokenBudgetRetriever(
        base_retriever=AsyncOnlyRetriever(docs=docs), max_tokens=600, counter=EXACT
    )
    with pytest.raises(RuntimeError, match="async only"):
        retriever.invoke("q")
    recorder = AsyncEventRecorder()
    out = await retriever.ainvoke("q", config={"callbacks": [recorder]})
    assert [d.id for d in out] == ["d1", "d2"]
    [(name, info, _)] = recorder.events
    assert (name, info.returned_count, info.next_offset) == (TRUNCATION_EVENT, 2, None)


async def test_the_event_in_astream_events(memory_store: InMemoryVectorStore) -> None:
    retriever = TokenBudgetRetriever(
        base_retriever=ScoredRetriever(vectorstore=memory_store, k=10), max_tokens=300
    )
    events = [e async for e in retriever.astream_events(QUERY, version="v2")]
    custom = [e for e in events if e["event"] == "on_custom_event"]
    assert [e["name"] for e in custom] == [TRUNCATION_EVENT]
    end = next(
        e
        for e in events
        if e["event"] == "on_retriever_end" and e["name"] == "TokenBudgetRetriever"
    )
    assert custom[0]["data"].returned_count == len(end["data"]["output"])
    assert retriever.base_retriever.async_calls == 1


def test_truncation_is_logged_at_debug(
    memory_store: InMemoryVectorStore, caplog: pytest.LogCaptureFixture
) -> None:
    retriever = TokenBudgetRetriever(
        base_retriever=ScoredRetriever(vectorstore=memory_store, k=10), max_tokens=300
    )
    with caplog.at_level(logging.DEBUG):
        docs = retriever.invoke(QUERY)
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    (line,) = [r for r in caplog.records if r.name == "langchain_ragbudget._events"]
    assert line.levelno == logging.DEBUG
    assert f"kept {len(docs)} of 10" in line.getMessage()


# -- embedded Chroma ----------------------------------------------------------------------------


async def test_over_embedded_chroma_sync_and_async(
    stdlib_docs: list[Document], embedding: HashingEmbedding, cl100k: TokenCounter
) -> None:
    store = Chroma(
        collection_name=f"budget-{uuid.uuid4().hex[:8]}",
        embedding_function=embedding,
        client=chromadb.EphemeralClient(),
        collection_configuration={"hnsw": {"space": "cosine"}},
    )
    store.add_documents(stdlib_docs)
    base = ScoredRetriever(
        vectorstore=store, k=15, relevance_scores=True, score_key="relevance_score"
    )
    fetched = base.invoke(QUERY)
    costs = [_cost(d, cl100k) for d in fetched]
    budget = sum(costs) // 2
    retriever = TokenBudgetRetriever(base_retriever=base, max_tokens=budget, counter=EXACT)

    sync_docs = retriever.invoke(QUERY)
    async_docs = await retriever.ainvoke(QUERY)

    n = _best_prefix(costs, budget)
    assert 0 < n < len(fetched)
    assert [d.id for d in sync_docs] == [d.id for d in async_docs] == [d.id for d in fetched[:n]]
    scores = [d.metadata["ragbudget"]["score"] for d in sync_docs]
    assert scores == sorted(scores, reverse=True)
    assert sum(d.metadata["ragbudget"]["tokens"] for d in async_docs) <= budget
    assert base.async_calls == 1


def test_the_class_docstring_examples_run_as_written() -> None:
    blocks = re.findall(r"```python\n(.*?)```", TokenBudgetRetriever.__doc__ or "", re.S)
    namespace: dict[str, Any] = {}
    for block in blocks[:2]:  # Instantiate, Use (the Async one needs an event loop)
        exec(textwrap.dedent(block), namespace)
    docs = namespace["docs"]
    assert len(docs) == 3  # "3 of the 20" (exact counts, the default with bpe-openai)
    shown = re.search(r"metadata\[\"ragbudget\"\] +# (\{.*\})", TokenBudgetRetriever.__doc__ or "")
    assert shown is not None
    assert docs[0].metadata["ragbudget"] == ast.literal_eval(
        shown.group(1)
    )  # as the docstring says


@pytest.mark.parametrize("budget", [200, 500, 1000, 4000])
@pytest.mark.parametrize("evidence", [False, True])
def test_max_tokens_is_a_hard_limit_by_default(
    stdlib_docs: list[Document], budget: int, evidence: bool
) -> None:
    # The default counter is exact (bpe-openai, installed with the plugin where it has wheels):
    # the documents a chain joins stay within max_tokens by both o200k and cl100k.
    options = {"merge_adjacent": True, "dedupe": True, "snippets": True} if evidence else {}
    retriever = TokenBudgetRetriever(
        base_retriever=ListRetriever(docs=stdlib_docs[:40]), max_tokens=budget, **options
    )
    docs = retriever.invoke("how are files and paths handled")
    assert docs
    joined = SEP.join(d.page_content for d in docs)
    for spec in ("tiktoken:o200k_base", "tiktoken:cl100k_base"):
        assert get_counter(spec).count(joined) <= budget, spec
