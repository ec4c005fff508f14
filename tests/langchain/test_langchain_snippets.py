"""snippets, max_per_source and mmr on a real splitter's Documents (add_start_index=True) from a
real vector store: within budget by the counter, every retrieved id accounted for, the caller's
Documents intact, a cut Document the file's own text at its start_index."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from _lc_parts import HashingEmbedding, ListRetriever
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.documents import Document
from langchain_core.prompts import PromptTemplate, format_document
from langchain_core.vectorstores import InMemoryVectorStore
from langchain_ragbudget import TokenBudgetCompressor, TokenBudgetRetriever
from langchain_text_splitters import RecursiveCharacterTextSplitter
from pydantic import ValidationError
from ragbudget import TokenCounter, get_counter

COUNTER = "tiktoken:cl100k_base"
PROMPT = PromptTemplate.from_template("[{source}]\n{page_content}")
QUERIES = ["decode a JSON document", "escape non-ASCII characters", "scan a number literal"]


class CountingEmbedding(HashingEmbedding):
    """HashingEmbedding that remembers how many texts it embedded (to see MMR use it)."""

    def __init__(self) -> None:
        super().__init__()
        self.embedded = 0

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.embedded += len(texts)
        return super().embed_documents(texts)


def _accounted(kept: list[Document], dropped: list[str]) -> list[str]:
    notes = [d.metadata["ragbudget"] for d in kept]
    ids = [str(d.id) for d in kept] + list(dropped)
    return ids + [i for n in notes for i in n.get("merged_ids", []) + n.get("duplicate_ids", [])]


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    budget=st.integers(30, 2500),
    merge=st.booleans(),
    snippets=st.booleans(),
    cap=st.sampled_from([None, 1, 2]),
    mmr=st.sampled_from([None, 0.5, 0.8]),
    embed=st.booleans(),
    formatted=st.booleans(),
    query=st.sampled_from(QUERIES),
)
def test_evidence_options_fit_and_account_for_every_document(
    split_store: InMemoryVectorStore,
    budget: int,
    merge: bool,
    snippets: bool,
    cap: int | None,
    mmr: float | None,
    embed: bool,
    formatted: bool,
    query: str,
) -> None:
    docs = split_store.as_retriever(search_kwargs={"k": 30}).invoke(query)
    before = copy.deepcopy(docs)
    options = TokenBudgetCompressor(
        max_tokens=budget, counter=COUNTER, merge_adjacent=merge, dedupe=True,
        snippets=snippets, max_per_source=cap, mmr=mmr,
        embeddings=HashingEmbedding() if embed else None,
        document_formatter=PROMPT if formatted else None,
    )  # fmt: skip
    kept, info = options._budget(docs, None, query)
    assert docs == before  # the caller's Documents are untouched
    counter = get_counter(COUNTER)
    rendered = [format_document(d, PROMPT) if formatted else d.page_content for d in kept]
    tokens = [counter.count(r + "\n\n") for r in rendered]
    assert tokens == [d.metadata["ragbudget"]["tokens"] for d in kept]
    assert sum(tokens) <= budget
    if snippets:  # select's measure is the sum; fit's is the joined text (at most the sum)
        assert info.used_tokens == sum(tokens)
    assert sorted(_accounted(kept, info.dropped_ids)) == sorted(str(d.id) for d in docs)
    assert set(info.cut_ids) == {d.id for d in kept if d.metadata["ragbudget"]["cut"]}
    if cap is not None:
        sources = [d.metadata["source"] for d in kept]
        assert max((sources.count(s) for s in sources), default=0) <= cap
    for doc in kept:
        note = doc.metadata["ragbudget"]
        text = Path(doc.metadata["source"]).read_text(encoding="utf-8")
        start = doc.metadata["start_index"]
        if snippets or not note["cut"]:  # a snippet, a span or a chunk: the file's own text
            assert text[start : start + len(doc.page_content)] == doc.page_content
        else:  # fit's cut: a prefix, and the visible marker
            assert "[... cut to fit" in doc.page_content


texts = st.lists(
    st.sampled_from(["alpha", "beta.", "gamma\n", "δέλτα", "汉字。", "\n\n", "x" * 30, "cookie"]),
    max_size=120,
).map(" ".join)


@settings(max_examples=60, deadline=None)
@given(
    pairs=st.lists(st.tuples(texts, st.one_of(st.none(), st.floats(-5, 5))), max_size=8),
    budget=st.integers(0, 200),
    cap=st.sampled_from([None, 1]),
    mmr=st.sampled_from([None, 0.6]),
    sep=st.sampled_from(["\n\n", "", "\n---\n"]),
)
def test_snippets_on_generated_documents(
    cl100k: TokenCounter,
    pairs: list[tuple[str, float | None]],
    budget: int,
    cap: int | None,
    mmr: float | None,
    sep: str,
) -> None:
    docs = [Document(page_content=t, metadata={"source": f"s{i % 3}", "score": s})
            for i, (t, s) in enumerate(pairs)]  # fmt: skip
    before = copy.deepcopy(docs)
    retriever = TokenBudgetRetriever(
        base_retriever=ListRetriever(docs=docs), max_tokens=budget, counter=cl100k,
        snippets=True, max_per_source=cap, mmr=mmr, document_separator=sep,
    )  # fmt: skip
    out = retriever.invoke("cookie jar")
    assert docs == before
    assert sum(cl100k.count(d.page_content + sep) for d in out) <= budget
    originals = {d.metadata["source"] + str(i): d.page_content for i, d in enumerate(docs)}
    for doc in out:  # a snippet is a part of its own document's text
        assert any(doc.page_content in t for t in originals.values())
    assert len(out) <= len(docs)


def test_snippets_show_more_documents_at_a_tight_budget(stdlib: Path) -> None:
    splitter = RecursiveCharacterTextSplitter(chunk_size=2400, chunk_overlap=200,
                                              add_start_index=True)  # fmt: skip
    files = [stdlib / "json" / f for f in ("decoder.py", "encoder.py", "scanner.py")]
    store = InMemoryVectorStore(HashingEmbedding())
    store.add_documents(splitter.split_documents(
        [Document(page_content=f.read_text(encoding="utf-8"), metadata={"source": str(f)})
         for f in files]))  # fmt: skip
    base = store.as_retriever(search_kwargs={"k": 10})
    query = "escape non-ASCII characters"
    plain = TokenBudgetRetriever(base_retriever=base, max_tokens=600, counter=COUNTER)
    more = TokenBudgetRetriever(base_retriever=base, max_tokens=600, counter=COUNTER,
                                merge_adjacent=True, dedupe=True, snippets=True)  # fmt: skip
    a, b = plain.invoke(query), more.invoke(query)
    assert len(b) > len(a)
    assert {d.metadata["source"] for d in b} > {d.metadata["source"] for d in a}
    cut = [d for d in b if d.metadata["ragbudget"]["cut"]]
    assert cut
    assert any("ascii" in d.page_content.lower() for d in cut)


async def test_async_retriever_gives_the_query_to_snippets(
    split_store: InMemoryVectorStore,
) -> None:
    base = split_store.as_retriever(search_kwargs={"k": 30})
    retriever = TokenBudgetRetriever(base_retriever=base, max_tokens=400, counter=COUNTER,
                                     snippets=True)  # fmt: skip
    query = "scan a number literal"
    assert await retriever.ainvoke(query) == retriever.invoke(query)
    compressor = TokenBudgetCompressor(max_tokens=400, counter=COUNTER, snippets=True)
    docs = base.invoke(query)
    assert await compressor.acompress_documents(docs, query) == list(
        compressor.compress_documents(docs, query)
    )


def test_cap_per_source_and_mmr_choose_other_files(split_store: InMemoryVectorStore) -> None:
    base = split_store.as_retriever(search_kwargs={"k": 30})
    query = "decode a JSON document"
    capped = TokenBudgetRetriever(base_retriever=base, max_tokens=100_000, counter=COUNTER,
                                  max_per_source=1)  # fmt: skip
    got = capped.invoke(query)
    sources = [d.metadata["source"] for d in got]
    assert (
        len(sources) == len(set(sources)) == len({d.metadata["source"] for d in base.invoke(query)})
    )
    embedding = CountingEmbedding()
    mmr = TokenBudgetRetriever(base_retriever=base, max_tokens=100_000, counter=COUNTER,
                               mmr=0.3, embeddings=embedding)  # fmt: skip
    plain = TokenBudgetRetriever(base_retriever=base, max_tokens=100_000, counter=COUNTER)
    a, b = plain.invoke(query), mmr.invoke(query)
    assert embedding.embedded == len(b) == len(a)  # MMR reorders; the budget holds them all
    assert [d.id for d in a] != [d.id for d in b]
    assert sorted(str(d.id) for d in a) == sorted(str(d.id) for d in b)


@pytest.mark.parametrize(
    ("options", "name"),
    [
        ({"snippets": True, "strategy": "fill"}, "strategy"),
        ({"snippets": True, "oversize": "drop"}, "oversize"),
        ({"max_per_source": 0}, "max_per_source"),
        ({"mmr": 1.5}, "mmr"),
        ({"embeddings": "not embeddings"}, "embeddings"),
    ],
)
def test_bad_evidence_options_name_the_argument(options: dict[str, Any], name: str) -> None:
    with pytest.raises(ValidationError, match=name):
        TokenBudgetCompressor(**options)
