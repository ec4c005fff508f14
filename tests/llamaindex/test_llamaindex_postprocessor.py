"""TokenBudgetPostprocessor on its own: counts, ranking, cuts, copies, tags, events, logs."""

from __future__ import annotations

import logging
import re

import pytest
from li_parts import (
    BudgetEvents,
    heapq_about,
    llm_tokens,
    module_docstring,
    scored,
)
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import MetadataMode, NodeWithScore, TextNode
from llama_index.postprocessor.ragbudget import TokenBudgetEvent, TokenBudgetPostprocessor
from pydantic import ValidationError
from ragbudget import TokenCounter

PROSE = ["argparse", "json", "statistics", "sched", "difflib", "pickle"]


def prose_nodes(scores: list[float | None]) -> list[NodeWithScore]:
    return [
        scored(module_docstring(name), score, f"n-{name}", module=name)
        for name, score in zip(PROSE, scores, strict=False)
    ]


def test_is_a_llamaindex_postprocessor() -> None:
    pp = TokenBudgetPostprocessor()
    assert isinstance(pp, BaseNodePostprocessor)
    assert TokenBudgetPostprocessor.class_name() == "TokenBudgetPostprocessor"
    assert (pp.max_tokens, pp.counter, pp.strategy, pp.oversize) == (8192, None, "stop", "truncate")
    assert pp.metadata_mode is MetadataMode.LLM
    assert TokenBudgetPostprocessor(512).max_tokens == 512


def test_keeps_highest_scores_in_input_order(cl100k: TokenCounter) -> None:
    nodes = prose_nodes([0.2, 0.9, None, 0.5, 0.7, 0.1])
    counts = {n.node.node_id: llm_tokens(cl100k, n) for n in nodes}
    ranked = ["n-json", "n-difflib", "n-sched", "n-argparse", "n-pickle", "n-statistics"]
    budget = sum(counts[i] for i in ranked[:3])  # exactly the best three
    out = TokenBudgetPostprocessor(max_tokens=budget, counter=cl100k).postprocess_nodes(nodes)
    assert [n.node.node_id for n in out] == ["n-json", "n-sched", "n-difflib"]  # input order
    assert [n.node.metadata["ragbudget"]["rank"] for n in out] == [0, 2, 1]
    assert [n.score for n in out] == [0.9, 0.5, 0.7]

    one_less = TokenBudgetPostprocessor(max_tokens=budget - 1, counter=cl100k)
    assert [n.node.node_id for n in one_less.postprocess_nodes(nodes)] == ["n-json", "n-difflib"]


def test_unscored_nodes_rank_after_scored_in_input_order(cl100k: TokenCounter) -> None:
    nodes = prose_nodes([None, 0.3, None, 0.1])
    out = TokenBudgetPostprocessor(max_tokens=10**6, counter=cl100k).postprocess_nodes(nodes)
    ranks = {n.node.node_id: n.node.metadata["ragbudget"]["rank"] for n in out}
    assert ranks == {"n-json": 0, "n-sched": 1, "n-argparse": 2, "n-statistics": 3}


def test_nan_score_ranks_like_a_missing_one(cl100k: TokenCounter) -> None:
    nodes = prose_nodes([float("nan"), 0.3])
    out = TokenBudgetPostprocessor(max_tokens=10**6, counter=cl100k).postprocess_nodes(nodes)
    assert [n.node.metadata["ragbudget"]["rank"] for n in out] == [1, 0]


def test_counts_what_the_llm_sees_metadata_included(cl100k: TokenCounter) -> None:
    # Metadata-heavy nodes: a long header the LLM sees, and a longer field it does not.
    nodes = []
    for i, name in enumerate(PROSE):
        node = TextNode(
            text=module_docstring(name)[:600],
            id_=f"m-{name}",
            metadata={
                "summary": module_docstring(PROSE[(i + 1) % len(PROSE)])[:800],
                "embedding_notes": "x " * 2000,
            },
            excluded_llm_metadata_keys=["embedding_notes"],
        )
        nodes.append(NodeWithScore(node=node, score=1.0 - i / 10))
    llm = [llm_tokens(cl100k, n) for n in nodes]
    text = [cl100k.count(n.node.get_content(metadata_mode=MetadataMode.NONE)) for n in nodes]
    assert all(a > 1.5 * b for a, b in zip(llm, text, strict=True))  # the header counts

    budget = sum(text)  # every bare text fits; what the LLM sees does not
    out = TokenBudgetPostprocessor(max_tokens=budget, counter=cl100k).postprocess_nodes(nodes)
    assert 0 < len(out) < len(nodes)
    assert sum(llm_tokens(cl100k, n) for n in out) <= budget
    assert [n.node.metadata["ragbudget"]["tokens"] for n in out] == llm[: len(out)]

    bare = TokenBudgetPostprocessor(
        max_tokens=budget, counter=cl100k, metadata_mode=MetadataMode.NONE
    ).postprocess_nodes(nodes)
    assert len(bare) == len(nodes)  # counting the bare text would have sent them all


def test_lone_oversized_top_node_is_cut_at_a_sentence_with_header_in_budget(
    cl100k: TokenCounter, budget_events: BudgetEvents
) -> None:
    about = heapq_about()
    header = {"file_path": "Lib/heapq.py", "summary": module_docstring("heapq")}
    big = NodeWithScore(
        node=TextNode(text=about, id_="about", metadata=header, start_char_idx=100),
        score=0.99,
    )
    small = scored(module_docstring("sched"), 0.5, "sched")
    header_tokens = cl100k.count(big.node.get_content(MetadataMode.LLM)) - cl100k.count(about)
    assert header_tokens > 300
    budget = 800  # under the 1,100-token text alone, and the header takes 300+ of it
    out = TokenBudgetPostprocessor(max_tokens=budget, counter=cl100k).postprocess_nodes(
        [small, big]
    )
    assert [n.node.node_id for n in out] == ["about"]
    node = out[0].node
    assert isinstance(node, TextNode)
    content = node.get_content(metadata_mode=MetadataMode.LLM)
    assert cl100k.count(content) <= budget
    assert node.metadata["ragbudget"] == {"tokens": cl100k.count(content), "rank": 0, "cut": True}
    assert content.startswith("file_path: Lib/heapq.py\nsummary: ")  # header kept whole
    kept, _marker = node.text.split("\n[... cut to fit a ", 1)
    assert about.startswith(kept)
    assert len(kept) > 1000
    assert re.search(r"[.!?][\"')\]]*$", kept), kept[-80:]  # ends at a sentence
    assert node.end_char_idx == 100 + len(kept)
    # the room the header leaves is used: within a sentence of the budget
    assert cl100k.count(content) > budget - 80

    (event,) = budget_events.events
    assert event.info.cut_ids == ["about"]
    assert event.info.dropped_ids == ["sched"]
    assert event.info.used_tokens == cl100k.count(content)
    assert event.info.reason == "token_budget"
    assert event.info.truncated


def test_oversize_drop_drops_instead_of_cutting(cl100k: TokenCounter) -> None:
    big = scored(heapq_about(), 0.99, "about")
    small = scored(module_docstring("sched"), 0.5, "sched")
    pp = TokenBudgetPostprocessor(max_tokens=400, counter=cl100k, oversize="drop")
    assert [n.node.node_id for n in pp.postprocess_nodes([big, small])] == ["sched"]


def test_a_header_bigger_than_the_budget_drops_the_node(
    cl100k: TokenCounter, budget_events: BudgetEvents
) -> None:
    node = scored("Short text.", 0.9, "meta", summary=module_docstring("argparse"))
    assert llm_tokens(cl100k, node) > 50
    assert TokenBudgetPostprocessor(max_tokens=50, counter=cl100k).postprocess_nodes([node]) == []
    (event,) = budget_events.events
    assert event.info.dropped_ids == ["meta"]
    assert event.info.cut_ids == []
    assert (event.info.returned_count, event.info.used_tokens) == (0, 0)
    assert event.info.reason == "token_budget"
    assert event.info.next_offset is None  # no budget would have room for it: nothing to page to


def test_a_node_too_big_to_cut_leaves_room_for_the_rest(cl100k: TokenCounter) -> None:
    huge_header = scored("Short text.", 0.9, "meta", summary=module_docstring("argparse"))
    small = scored(module_docstring("sched"), 0.5, "sched")
    budget = llm_tokens(cl100k, small) + 5
    for strategy in ("stop", "fill"):
        pp = TokenBudgetPostprocessor(max_tokens=budget, counter=cl100k, strategy=strategy)
        assert [n.node.node_id for n in pp.postprocess_nodes([huge_header, small])] == ["sched"]


def test_fill_keeps_smaller_nodes_after_a_bigger_one_misses(cl100k: TokenCounter) -> None:
    nodes = [
        scored(module_docstring("argparse"), 0.9, "first"),
        scored(module_docstring("sched"), 0.8, "second"),
        scored("A short note.", 0.1, "third"),
    ]
    first, second, third = (llm_tokens(cl100k, n) for n in nodes)
    budget = first + third + 1
    assert second < budget < first + second
    stop = TokenBudgetPostprocessor(max_tokens=budget, counter=cl100k)
    fill = TokenBudgetPostprocessor(max_tokens=budget, counter=cl100k, strategy="fill")
    assert [n.node.node_id for n in stop.postprocess_nodes(nodes)] == ["first"]
    assert [n.node.node_id for n in fill.postprocess_nodes(nodes)] == ["first", "third"]


def test_returns_copies_and_never_touches_the_callers_nodes(cl100k: TokenCounter) -> None:
    nodes = prose_nodes([0.9, 0.8, 0.7])
    nodes[0].node.excluded_llm_metadata_keys = ["module"]
    before = [n.model_dump() for n in nodes]
    out = TokenBudgetPostprocessor(max_tokens=10**6, counter=cl100k).postprocess_nodes(nodes)
    assert [n.model_dump() for n in nodes] == before
    for src, new in zip(nodes, out, strict=True):
        assert new is not src
        assert new.node is not src.node
        assert new.node.metadata is not src.node.metadata
        assert "ragbudget" not in src.node.metadata
        assert new.node.node_id == src.node.node_id
    assert out[0].node.excluded_llm_metadata_keys == ["module", "ragbudget"]
    assert nodes[0].node.excluded_llm_metadata_keys == ["module"]


def test_tag_is_hidden_from_llm_and_embed_and_leaves_the_count(cl100k: TokenCounter) -> None:
    nodes = prose_nodes([0.9, 0.8])
    out = TokenBudgetPostprocessor(max_tokens=10**6, counter=cl100k).postprocess_nodes(nodes)
    for src, new in zip(nodes, out, strict=True):
        for mode in (MetadataMode.LLM, MetadataMode.EMBED):
            assert new.node.get_content(mode) == src.node.get_content(mode)
            assert "ragbudget" in new.node.get_content(MetadataMode.ALL)
        assert new.node.metadata["ragbudget"]["tokens"] == llm_tokens(cl100k, src)
        assert "ragbudget" in new.node.excluded_embed_metadata_keys

    # A second pass over tagged nodes counts the same and re-tags without duplicating keys.
    again = TokenBudgetPostprocessor(max_tokens=10**6, counter=cl100k).postprocess_nodes(out)
    assert [n.node.metadata["ragbudget"] for n in again] == [
        n.node.metadata["ragbudget"] for n in out
    ]
    assert again[0].node.excluded_llm_metadata_keys.count("ragbudget") == 1


def test_empty_input_returns_empty_and_still_reports(budget_events: BudgetEvents) -> None:
    assert TokenBudgetPostprocessor(max_tokens=100).postprocess_nodes([]) == []
    (event,) = budget_events.events
    assert event.info.original_count == 0
    assert not event.info.truncated
    assert event.nodes == []


def test_zero_budget_drops_everything(cl100k: TokenCounter, budget_events: BudgetEvents) -> None:
    nodes = prose_nodes([0.5, 0.6])
    assert TokenBudgetPostprocessor(max_tokens=0, counter=cl100k).postprocess_nodes(nodes) == []
    (event,) = budget_events.events
    assert event.info.dropped_ids == ["n-json", "n-argparse"]
    assert event.info.next_offset is None  # a postprocessor cannot page: no continuation


def test_repeated_node_ids_are_told_apart(cl100k: TokenCounter) -> None:
    node = scored(module_docstring("sched"), 0.5, "same")
    twin = NodeWithScore(node=node.node, score=0.4)
    one = llm_tokens(cl100k, node)
    out = TokenBudgetPostprocessor(max_tokens=one, counter=cl100k).postprocess_nodes([node, twin])
    assert len(out) == 1
    assert out[0].score == 0.5


def test_event_reaches_a_real_handler_with_the_query(
    cl100k: TokenCounter, budget_events: BudgetEvents
) -> None:
    nodes = prose_nodes([0.9, 0.1])
    budget = llm_tokens(cl100k, nodes[0])
    pp = TokenBudgetPostprocessor(max_tokens=budget, counter=cl100k)
    out = pp.postprocess_nodes(nodes, query_str="how are arguments parsed?")
    (event,) = budget_events.events
    assert isinstance(event, TokenBudgetEvent)
    assert event.class_name() == "TokenBudgetEvent"
    assert event.query_str == "how are arguments parsed?"
    assert event.info.dropped_ids == ["n-json"]
    assert event.info.counter == "tiktoken:cl100k_base"
    assert event.info.exact
    assert event.info.notice() == (f"[Showing 1 of 2 results ({budget:,}-token budget)]")
    assert [n.node.node_id for n in event.nodes] == [n.node.node_id for n in out]
    assert budget_events.via == ["sync"]


async def test_async_path_fits_the_same_and_dispatches_on_the_loop(
    cl100k: TokenCounter, budget_events: BudgetEvents
) -> None:
    nodes = prose_nodes([0.2, 0.9, None, 0.5])
    budget = sum(llm_tokens(cl100k, n) for n in nodes[1::2])
    pp = TokenBudgetPostprocessor(max_tokens=budget, counter=cl100k)
    sync = pp.postprocess_nodes(nodes)
    out = await pp.apostprocess_nodes(nodes, query_str="q")
    assert [n.model_dump() for n in out] == [n.model_dump() for n in sync]
    assert budget_events.via == ["sync", "async"]
    assert budget_events.events[1].query_str == "q"
    assert budget_events.events[1].info == budget_events.events[0].info


def test_logs_one_debug_line_per_call_and_installs_no_filter(
    cl100k: TokenCounter, caplog: pytest.LogCaptureFixture
) -> None:
    nodes = prose_nodes([0.9, 0.8])
    pp = TokenBudgetPostprocessor(max_tokens=llm_tokens(cl100k, nodes[0]), counter=cl100k)
    with caplog.at_level(logging.DEBUG):
        pp.postprocess_nodes(nodes)
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    (line,) = [r for r in caplog.records if r.name == "llama_index.postprocessor.ragbudget.base"]
    assert line.levelno == logging.DEBUG
    assert "kept 1 of 2, 1 dropped" in line.getMessage()
    # No package installs filters on another package's logger.
    assert not logging.getLogger("ragbudget").filters
    assert not logging.getLogger("ragbudget.budget").filters


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"max_tokens": -1}, "max_tokens"),
        ({"max_tokens": True}, "max_tokens"),
        ({"max_tokens": "100"}, "max_tokens"),
        ({"strategy": "greedy"}, "strategy"),
        ({"oversize": "split"}, "oversize"),
        ({"metadata_mode": "everything"}, "metadata_mode"),
        ({"top_n": 3}, "top_n"),
    ],
)
def test_bad_arguments_name_the_argument(kwargs: dict[str, object], field: str) -> None:
    with pytest.raises(ValidationError, match=field):
        TokenBudgetPostprocessor(**kwargs)  # type: ignore[arg-type]


def test_bad_counter_fails_at_construction() -> None:
    with pytest.raises(ValueError, match="unknown counter spec 'tiktokn:cl100k_base'"):
        TokenBudgetPostprocessor(counter="tiktokn:cl100k_base")


def test_nodes_must_be_nodes_with_score() -> None:
    pp = TokenBudgetPostprocessor()
    with pytest.raises(TypeError, match=r"nodes\[0\] must be a NodeWithScore, got TextNode"):
        pp.postprocess_nodes([TextNode(text="x")])  # type: ignore[list-item]


def test_serializes_and_loads_back() -> None:
    pp = TokenBudgetPostprocessor(max_tokens=300, counter="chars:3", strategy="fill")
    data = pp.to_dict()
    assert data["class_name"] == "TokenBudgetPostprocessor"
    back = TokenBudgetPostprocessor.from_json(pp.to_json())
    assert (back.max_tokens, back.counter, back.strategy) == (300, "chars:3", "fill")
    assert back.metadata_mode is MetadataMode.LLM
    assert TokenBudgetPostprocessor(counter=len).to_dict()["counter"] is None


@pytest.mark.parametrize("oversize", ["truncate", "drop"])
async def test_a_budget_too_small_for_any_node_is_an_empty_list_with_the_reason(
    oversize: str,
    cl100k: TokenCounter,
    budget_events: BudgetEvents,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Documented in docs/llamaindex.md: an empty list (no exception), the event's report says
    why (truncated, reason token_budget, every id dropped), and one WARNING says what to fix."""
    nodes = prose_nodes([0.5, 0.6])
    # 1 token holds not even the cut marker; with "drop", 20 hold no whole docstring
    budget = TokenBudgetPostprocessor(
        max_tokens=1 if oversize == "truncate" else 20, counter=cl100k, oversize=oversize
    )
    with caplog.at_level(logging.WARNING):
        assert budget.postprocess_nodes(nodes) == []
        assert await budget.apostprocess_nodes(nodes) == []
    for event in budget_events.events:
        info = event.info
        assert (info.truncated, info.reason, info.returned_count) == (True, "token_budget", 0)
        assert sorted(info.dropped_ids) == ["n-argparse", "n-json"] and event.nodes == []
    assert len(budget_events.events) == 2
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 2, warnings
    assert (
        "holds none of the nodes given (2 nodes;" in warnings[0]
        and "raise max_tokens" in warnings[0]
    )
    assert TokenBudgetPostprocessor(max_tokens=0).postprocess_nodes(nodes) == []
    assert len([r for r in caplog.records if r.levelno == logging.WARNING]) == 2  # 0 is asked
