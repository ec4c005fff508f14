"""The README's guarantees for the LangChain classes, on generated documents (hypothesis)."""

from __future__ import annotations

import copy

from _lc_parts import ListRetriever
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.documents import Document
from langchain_core.prompts import PromptTemplate, format_document
from langchain_ragbudget import TokenBudgetCompressor, TokenBudgetRetriever
from ragbudget import TokenCounter

PROMPT = PromptTemplate.from_template("[{source}] {page_content}")
_MARK = "[... cut to fit"

texts = st.one_of(
    st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=400),
    st.lists(st.sampled_from(["alpha", "beta.", "gamma\n", "δέλτα", "汉字。", "\n\n", "x" * 30]),
             max_size=120).map(" ".join),
)  # fmt: skip
documents = st.lists(
    st.tuples(texts, st.one_of(st.none(), st.floats(-5, 5, allow_nan=False))), max_size=8
).map(
    lambda pairs: [
        Document(page_content=t, metadata={"source": f"s{i}", "score": s})
        for i, (t, s) in enumerate(pairs)
    ]
)


@settings(max_examples=60, deadline=None)
@given(
    docs=documents,
    budget=st.integers(0, 160),
    strategy=st.sampled_from(["stop", "fill"]),
    oversize=st.sampled_from(["truncate", "drop"]),
    formatted=st.booleans(),
    sep=st.sampled_from(["\n\n", "", "\n---\n", "🙂\n", "\u200d", "😀", "👨\u200d👩\u200d👧"]),
)
def test_returned_documents_fit_and_originals_stay_intact(
    cl100k: TokenCounter,
    docs: list[Document],
    budget: int,
    strategy: str,
    oversize: str,
    formatted: bool,
    sep: str,
) -> None:
    before = copy.deepcopy(docs)
    options = {
        "max_tokens": budget,
        "counter": cl100k,
        "strategy": strategy,
        "oversize": oversize,
        "document_formatter": PROMPT if formatted else None,
        "document_separator": sep,
    }
    out = TokenBudgetRetriever(base_retriever=ListRetriever(docs=docs), **options).invoke("q")

    # The budget holds for the text the model sees: each document rendered, plus a separator.
    costs = [cl100k.count((format_document(d, PROMPT) if formatted else d.page_content) + sep)
             for d in out]  # fmt: skip
    assert costs == [d.metadata["ragbudget"]["tokens"] for d in out]
    assert sum(costs) <= budget
    # ... and counted as the chain joins it: BPE counts do not add up across joins.
    rendered = [format_document(d, PROMPT) if formatted else d.page_content for d in out]
    assert cl100k.count(sep.join(rendered)) <= budget
    # The caller's documents are untouched; the returned ones are in rank order.
    assert docs == before
    ranks = [d.metadata["ragbudget"]["rank"] for d in out]
    assert ranks == sorted(set(ranks))
    by_source = {d.metadata["source"]: d for d in docs}
    for doc in out:
        original = by_source[doc.metadata["source"]].page_content
        if not doc.metadata["ragbudget"]["cut"]:
            assert doc.page_content == original
        else:
            assert oversize == "truncate"
            kept = doc.page_content.rpartition(_MARK)[0].removesuffix("\n")
            assert original.startswith(kept)
            assert doc.page_content.endswith("tokens in full]")
    # The compressor, given the same documents, returns the same.
    same = TokenBudgetCompressor(**options).compress_documents(docs, "q")
    assert same == out
