"""merge_adjacent and dedupe on a real splitter's Documents (add_start_index=True) from a real
vector store: within budget, every retrieved id accounted for, the caller's Documents intact."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.vectorstores import InMemoryVectorStore
from langchain_ragbudget import TokenBudgetCompressor, TokenBudgetRetriever
from ragbudget import get_counter

COUNTER = "tiktoken:cl100k_base"


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    budget=st.integers(50, 3000),
    merge=st.booleans(),
    dedupe=st.booleans(),
    query=st.sampled_from(["decode a JSON document", "escape non-ASCII", "scan a number"]),
)
def test_folding_fits_and_accounts_for_every_document(
    split_store: InMemoryVectorStore, budget: int, merge: bool, dedupe: bool, query: str
) -> None:
    docs = split_store.as_retriever(search_kwargs={"k": 30}).invoke(query)
    before = [d.model_copy(deep=True) for d in docs]
    options = TokenBudgetCompressor(max_tokens=budget, counter=COUNTER, merge_adjacent=merge,
                                    dedupe=dedupe)  # fmt: skip
    kept, info = options._budget(docs, None)
    assert docs == before  # the caller's Documents are untouched
    assert get_counter(COUNTER).count("\n\n".join(d.page_content for d in kept)) <= budget
    notes = [d.metadata["ragbudget"] for d in kept]
    accounted = [d.id for d in kept] + list(info.dropped_ids)
    accounted += [i for n in notes for i in n.get("merged_ids", []) + n.get("duplicate_ids", [])]
    assert sorted(accounted) == sorted(d.id for d in docs)  # type: ignore[type-var]
    assert info.original_count == len(docs)
    for doc in kept:  # a merged span is the file's text at its start_index
        if doc.metadata["ragbudget"].get("merged_ids") and not doc.metadata["ragbudget"]["cut"]:
            text = Path(doc.metadata["source"]).read_text(encoding="utf-8")
            start = doc.metadata["start_index"]
            assert text[start : start + len(doc.page_content)] == doc.page_content


def test_merging_shows_more_of_a_file_in_one_document(split_store: InMemoryVectorStore) -> None:
    base = split_store.as_retriever(search_kwargs={"k": 30})
    plain = TokenBudgetRetriever(base_retriever=base, max_tokens=100_000, counter=COUNTER)
    folded = TokenBudgetRetriever(base_retriever=base, max_tokens=100_000, counter=COUNTER,
                                  merge_adjacent=True, dedupe=True)  # fmt: skip
    a, b = plain.invoke("decode a JSON document"), folded.invoke("decode a JSON document")
    assert len(b) < len(a)
    assert any(d.metadata["ragbudget"].get("merged_ids") for d in b)
    assert any(d.metadata["ragbudget"].get("duplicate_ids") for d in b)
    shown = sum(len(d.page_content) for d in b)
    assert shown < sum(len(d.page_content) for d in a)  # the overlaps and the copy, once
