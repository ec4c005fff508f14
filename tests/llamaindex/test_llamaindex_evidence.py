"""The evidence options (merge_adjacent, dedupe, max_per_source, mmr, snippets) on a real
VectorStoreIndex: Documents split by SentenceSplitter (start/end_char_idx and the SOURCE
relationship set), a deterministic offline embedding, used through its retriever and a query
engine. Within budget by the counter, every retrieved id accounted for, the caller's nodes
intact, every returned node the Document's own text at its indices."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from li_parts import STDLIB, BudgetEvents, WordsEmbedding
from llama_index.core import Document, VectorStoreIndex
from llama_index.core.llms import MockLLM
from llama_index.core.node_parser import SentenceSplitter
from llama_index.core.schema import (
    MetadataMode,
    NodeRelationship,
    NodeWithScore,
    RelatedNodeInfo,
    TextNode,
)
from llama_index.postprocessor.ragbudget import TokenBudgetPostprocessor
from pydantic import ValidationError
from ragbudget import get_counter

COUNTER = get_counter("tiktoken:cl100k_base")
FILES = ("json/decoder.py", "json/encoder.py", "json/scanner.py")
QUERIES = ("escape non-ASCII characters", "decode a JSON document", "scan a number literal")


def _documents() -> list[Document]:
    docs = [Document(text=(STDLIB / f).read_text(encoding="utf-8"), id_=f,
                     metadata={"file_path": f}) for f in FILES]  # fmt: skip
    # a vendored copy of the first file: the same texts under another Document
    docs.append(Document(text=docs[0].text, id_="vendor/" + FILES[0],
                         metadata={"file_path": "vendor/" + FILES[0]}))  # fmt: skip
    return docs


DOCS = {d.id_: d.text for d in _documents()}


@pytest.fixture(scope="module")
def index() -> VectorStoreIndex:
    return VectorStoreIndex.from_documents(
        _documents(),
        embed_model=WordsEmbedding(),
        transformations=[SentenceSplitter(chunk_size=256, chunk_overlap=64)],
    )


class Retrieved(dict[str, list[NodeWithScore]]):
    """Each query's retrieved nodes (a short repr for hypothesis's failure reports)."""

    def __repr__(self) -> str:
        return f"Retrieved({sorted(self)})"


@pytest.fixture(scope="module")
def retrieved(index: VectorStoreIndex) -> Retrieved:
    retriever = index.as_retriever(similarity_top_k=30)
    return Retrieved({q: retriever.retrieve(q) for q in QUERIES})


def _count(nws: NodeWithScore, mode: MetadataMode = MetadataMode.LLM) -> int:
    return COUNTER.count(nws.node.get_content(metadata_mode=mode))


def _accounted(out: list[NodeWithScore], dropped: list[str]) -> list[str]:
    tags = [n.node.metadata["ragbudget"] for n in out]
    ids = [n.node.node_id for n in out] + dropped
    return ids + [i for t in tags for i in t.get("merged_ids", []) + t.get("duplicate_ids", [])]


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    budget=st.integers(0, 2500),
    merge=st.booleans(),
    dedupe=st.booleans(),
    cap=st.sampled_from([None, 1, 2]),
    mmr=st.sampled_from([None, 0.5, 0.8]),
    snippets=st.booleans(),
    mode=st.sampled_from([MetadataMode.LLM, MetadataMode.NONE, MetadataMode.ALL]),
    query=st.sampled_from(QUERIES),
)
def test_evidence_options_keep_the_guarantees(
    retrieved: dict[str, list[NodeWithScore]],
    budget_events: BudgetEvents,
    budget: int,
    merge: bool,
    dedupe: bool,
    cap: int | None,
    mmr: float | None,
    snippets: bool,
    mode: MetadataMode,
    query: str,
) -> None:
    nodes = retrieved[query]
    before = [n.model_dump() for n in nodes]
    pp = TokenBudgetPostprocessor(max_tokens=budget, counter=COUNTER, metadata_mode=mode,
                                  merge_adjacent=merge, dedupe=dedupe, max_per_source=cap,
                                  mmr=mmr, snippets=snippets)  # fmt: skip
    out = pp.postprocess_nodes(nodes, query_str=query)
    assert [n.model_dump() for n in nodes] == before  # the caller's nodes are untouched
    counts = [_count(n, mode) for n in out]
    assert counts == [n.node.metadata["ragbudget"]["tokens"] for n in out]
    assert sum(counts) <= budget
    info = budget_events.events[-1].info  # the handler lives for all examples: the last
    assert info.used_tokens == sum(counts)
    given_ids = [n.node.node_id for n in nodes]
    assert sorted(_accounted(out, list(info.dropped_ids))) == sorted(given_ids)
    assert [given_ids.index(n.node.node_id) for n in out] == sorted(
        given_ids.index(n.node.node_id) for n in out
    )  # input order
    assert set(info.cut_ids) == {n.node.node_id for n in out if n.node.metadata["ragbudget"]["cut"]}
    if cap is not None:
        sources = [n.node.ref_doc_id for n in out]
        assert max((sources.count(s) for s in sources), default=0) <= cap
    for n in out:  # a node, a merged span or a snippet: its Document's own text at its indices
        node = n.node
        if pp.evidence() is None and node.metadata["ragbudget"]["cut"]:
            continue  # the plain budget's cut: a prefix and its visible marker
        assert isinstance(node, TextNode)
        assert node.start_char_idx is not None and node.ref_doc_id is not None
        assert DOCS[node.ref_doc_id][node.start_char_idx : node.end_char_idx] == node.text
    if not snippets:
        assert not info.cut_ids or len(out) == 1  # only a lone top node too large is cut


def test_merge_and_dedupe_show_each_text_once(retrieved: dict[str, list[NodeWithScore]]) -> None:
    nodes = retrieved["decode a JSON document"]
    pp = TokenBudgetPostprocessor(max_tokens=100_000, counter=COUNTER, merge_adjacent=True,
                                  dedupe=True)  # fmt: skip
    out = pp.postprocess_nodes(nodes)
    tags = [n.node.metadata["ragbudget"] for n in out]
    assert len(out) < len(nodes)
    assert any(t.get("merged_ids") for t in tags)
    assert any(t.get("duplicate_ids") for t in tags)
    assert sum(len(n.node.text) for n in out) < sum(len(n.node.text) for n in nodes)
    assert "ragbudget" not in out[0].node.get_content(metadata_mode=MetadataMode.LLM)


def test_snippets_through_a_query_engine(index: VectorStoreIndex) -> None:
    query = "escape non-ASCII characters"
    plain = TokenBudgetPostprocessor(max_tokens=600, counter=COUNTER)
    more = TokenBudgetPostprocessor(max_tokens=600, counter=COUNTER, merge_adjacent=True,
                                    dedupe=True, snippets=True)  # fmt: skip
    answers = [
        index.as_query_engine(llm=MockLLM(), similarity_top_k=30, node_postprocessors=[pp])
        .query(query)
        for pp in (plain, more)
    ]  # fmt: skip
    a, b = (r.source_nodes for r in answers)
    assert len(b) > len(a)
    assert sum(_count(n) for n in b) <= 600
    cut = [n for n in b if n.node.metadata["ragbudget"]["cut"]]
    assert cut
    assert any("ascii" in n.node.text.lower() for n in cut)


async def test_async_matches_sync(
    retrieved: dict[str, list[NodeWithScore]], budget_events: BudgetEvents
) -> None:
    query = "scan a number literal"
    pp = TokenBudgetPostprocessor(max_tokens=500, counter=COUNTER, merge_adjacent=True,
                                  dedupe=True, snippets=True, max_per_source=2)  # fmt: skip
    nodes = retrieved[query]
    got = await pp.apostprocess_nodes(nodes, query_str=query)
    assert [n.model_dump() for n in got] == [
        n.model_dump() for n in pp.postprocess_nodes(nodes, query_str=query)
    ]
    assert budget_events.via == ["async", "sync"]
    report = budget_events.events[0].evidence
    assert report is not None
    assert report.kept_ids and report.max_tokens == 500


def test_mmr_uses_node_embeddings_where_every_node_has_one() -> None:
    # Lexically, b repeats a and c is new; by the embeddings, c repeats a and b is new.
    texts = {"a": "parse the header line", "b": "parse the header line again",
             "c": "unrelated words entirely"}  # fmt: skip
    vectors = {"a": [1.0, 0.0], "b": [0.0, 1.0], "c": [1.0, 0.0]}
    budget = sum(COUNTER.count(texts[k]) for k in ("a", "b"))  # any two fit, not three

    def nodes(embedded: bool) -> list[NodeWithScore]:
        return [
            NodeWithScore(node=TextNode(text=texts[k], id_=k,
                                        embedding=vectors[k] if embedded else None),
                          score=1.0 - i / 10)
            for i, k in enumerate("abc")
        ]  # fmt: skip

    pp = TokenBudgetPostprocessor(max_tokens=budget, counter=COUNTER, mmr=0.1)
    assert [n.node.node_id for n in pp.postprocess_nodes(nodes(True))] == ["a", "b"]
    assert [n.node.node_id for n in pp.postprocess_nodes(nodes(False))] == ["a", "c"]


@pytest.mark.parametrize(
    ("options", "name"),
    [
        ({"dedupe": True, "strategy": "fill"}, "strategy"),
        ({"snippets": True, "oversize": "drop"}, "oversize"),
        ({"max_per_source": 0}, "max_per_source"),
        ({"mmr": 2.0}, "mmr"),
    ],
)
def test_bad_evidence_options_name_the_argument(options: dict[str, Any], name: str) -> None:
    with pytest.raises(ValidationError, match=name):
        TokenBudgetPostprocessor(**options)


WORDS = ["alpha", "beta.", "gamma\n", "δέλτα", "汉字。", "\n\n", "header", "parse", "x" * 30]


@st.composite
def split_nodes(draw: st.DrawFn) -> tuple[dict[str, str], list[NodeWithScore]]:
    """Nodes cut from generated Documents at generated (overlapping, adjacent, repeated)
    spans, with the SOURCE relationship and indices SentenceSplitter would set; some repeat
    another Document's text; some carry an embedding; metadata headers vary."""
    docs = {f"d{i}": " ".join(draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=60)))
            for i in range(draw(st.integers(1, 3)))}  # fmt: skip
    nodes = []
    for i in range(draw(st.integers(0, 9))):
        ref = draw(st.sampled_from(sorted(docs)))
        text = docs[ref]
        start = draw(st.integers(0, len(text) - 1))
        end = draw(st.integers(start + 1, len(text)))
        node = TextNode(text=text[start:end], id_=f"n{i}", start_char_idx=start,
                        end_char_idx=end, metadata=draw(st.sampled_from([{}, {"f": ref}])))  # fmt: skip
        node.relationships[NodeRelationship.SOURCE] = RelatedNodeInfo(node_id=ref)
        nodes.append(NodeWithScore(node=node, score=draw(st.one_of(st.none(), st.floats(-1, 1)))))
    return docs, nodes


@settings(
    max_examples=80,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    case=split_nodes(),
    budget=st.integers(0, 400),
    merge=st.booleans(),
    dedupe=st.booleans(),
    cap=st.sampled_from([None, 1]),
    mmr=st.sampled_from([None, 0.3]),
    snippets=st.booleans(),
)
def test_evidence_options_on_generated_nodes(
    budget_events: BudgetEvents,
    case: tuple[dict[str, str], list[NodeWithScore]],
    budget: int,
    merge: bool,
    dedupe: bool,
    cap: int | None,
    mmr: float | None,
    snippets: bool,
) -> None:
    docs, nodes = case
    before = [n.model_dump() for n in nodes]
    pp = TokenBudgetPostprocessor(max_tokens=budget, counter=COUNTER, merge_adjacent=merge,
                                  dedupe=dedupe, max_per_source=cap, mmr=mmr,
                                  snippets=snippets)  # fmt: skip
    out = pp.postprocess_nodes(nodes, query_str="parse the header")
    assert [n.model_dump() for n in nodes] == before
    assert sum(_count(n) for n in out) <= budget
    tags = [n.node.metadata["ragbudget"] for n in out]
    assert [_count(n) for n in out] == [t["tokens"] for t in tags]
    info = budget_events.events[-1].info
    accounted = _accounted(out, list(info.dropped_ids))
    assert sorted(accounted) == sorted(n.node.node_id for n in nodes)
    assert info.used_tokens == sum(t["tokens"] for t in tags)
    for n in out:
        node = n.node
        assert isinstance(node, TextNode) and node.ref_doc_id is not None
        assert docs[node.ref_doc_id][node.start_char_idx : node.end_char_idx] == node.text
