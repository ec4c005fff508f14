"""The README's guarantees, checked on generated nodes with an exact tokenizer."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st
from li_parts import PROSE_MODULES, module_docstring
from llama_index.core.schema import MetadataMode, NodeWithScore, TextNode
from llama_index.postprocessor.ragbudget import TokenBudgetPostprocessor
from ragbudget import get_counter

COUNTER = get_counter("tiktoken:cl100k_base")
SENTENCES = sorted(
    {
        s.strip()
        for name in PROSE_MODULES
        for s in re.split(r"(?<=[.!?])\s+", module_docstring(name))
        if 3 < len(s.strip()) < 300
    }
)
prose = st.lists(st.sampled_from(SENTENCES), max_size=10).map(" ".join)
metadata = st.dictionaries(st.sampled_from(["title", "file_path", "summary"]), prose, max_size=3)


@st.composite
def node_lists(draw: st.DrawFn) -> list[NodeWithScore]:
    nodes = []
    for i in range(draw(st.integers(0, 8))):
        meta = draw(metadata)
        hidden = draw(st.lists(st.sampled_from(sorted(meta) or ["none"]), unique=True))
        node = TextNode(
            text=draw(prose), id_=f"n{i}", metadata=meta, excluded_llm_metadata_keys=hidden
        )
        score = draw(st.one_of(st.none(), st.floats(-1, 1)))
        nodes.append(NodeWithScore(node=node, score=score))
    return nodes


def llm_count(nws: NodeWithScore) -> int:
    return COUNTER.count(nws.node.get_content(metadata_mode=MetadataMode.LLM))


@settings(max_examples=60, deadline=None)
@given(
    nodes=node_lists(),
    max_tokens=st.integers(0, 700),
    strategy=st.sampled_from(["stop", "fill"]),
    oversize=st.sampled_from(["truncate", "drop"]),
)
def test_budget_guarantees(
    nodes: list[NodeWithScore], max_tokens: int, strategy: str, oversize: str
) -> None:
    before = [n.model_dump() for n in nodes]
    pp = TokenBudgetPostprocessor(
        max_tokens=max_tokens,
        counter=COUNTER,
        strategy=strategy,  # type: ignore[arg-type]
        oversize=oversize,  # type: ignore[arg-type]
    )
    out = pp.postprocess_nodes(nodes)

    # What the LLM sees fits, and each tag says what it counts.
    counts = [llm_count(n) for n in out]
    assert sum(counts) <= max_tokens
    assert [n.node.metadata["ragbudget"]["tokens"] for n in out] == counts
    # The caller's nodes are untouched; the kept ones come back in input order.
    assert [n.model_dump() for n in nodes] == before
    ids = [n.node.node_id for n in nodes]
    kept = [n.node.node_id for n in out]
    assert kept == [i for i in ids if i in kept]
    # Uncut nodes come back whole; cut ones are prefixes of their text.
    by_id = {n.node.node_id: n for n in nodes}
    for n in out:
        src = by_id[n.node.node_id]
        if n.node.metadata["ragbudget"]["cut"]:
            assert oversize == "truncate"
            assert llm_count(src) > max_tokens
        else:
            assert n.node.get_content(MetadataMode.LLM) == src.node.get_content(MetadataMode.LLM)


@settings(max_examples=60, deadline=None)
@given(nodes=node_lists(), max_tokens=st.integers(0, 700))
def test_stop_keeps_the_longest_ranked_run_that_fits(
    nodes: list[NodeWithScore], max_tokens: int
) -> None:
    pp = TokenBudgetPostprocessor(max_tokens=max_tokens, counter=COUNTER, oversize="drop")
    out = pp.postprocess_nodes(nodes)

    ranked = sorted(
        range(len(nodes)),
        key=lambda i: (nodes[i].score is None, -(nodes[i].score or 0.0), i),
    )
    expected, used = set(), 0
    for i in ranked:
        n = llm_count(nodes[i])
        if max_tokens == 0:
            break
        if n > max_tokens:
            continue  # oversize="drop": dropped without ending the run
        if used + n > max_tokens:
            break
        expected.add(nodes[i].node.node_id)
        used += n
    assert {n.node.node_id for n in out} == expected
    ranks = {nodes[i].node.node_id: r for r, i in enumerate(ranked)}
    assert all(n.node.metadata["ragbudget"]["rank"] == ranks[n.node.node_id] for n in out)


@settings(max_examples=60, deadline=None)
@given(
    nodes=node_lists(),
    max_tokens=st.integers(0, 700),
    oversize=st.sampled_from(["truncate", "drop"]),
)
def test_metadata_mode_all_counts_the_tag_it_shows(
    nodes: list[NodeWithScore], max_tokens: int, oversize: str
) -> None:
    """With `MetadataMode.ALL` the ragbudget tag is part of what is rendered: the nodes as
    returned, tag and all, fit the budget, and each tag holds its own node's count."""
    pp = TokenBudgetPostprocessor(
        max_tokens=max_tokens,
        counter=COUNTER,
        oversize=oversize,  # type: ignore[arg-type]
        metadata_mode=MetadataMode.ALL,
    )
    out = pp.postprocess_nodes(nodes)
    counts = [COUNTER.count(n.node.get_content(metadata_mode=MetadataMode.ALL)) for n in out]
    assert sum(counts) <= max_tokens
    assert [n.node.metadata["ragbudget"]["tokens"] for n in out] == counts
