"""The middleware's guarantees on random results, by the exact counter (tiktoken cl100k).

For any text or JSON result over the budget: every text the model sees (the first page and
each `more` page) counts at most the budget; every JSON text parses; structured content that
mirrors the text is the shown value; the pages joined give back the whole result.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from fastmcp.tools import ToolResult
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp_types import TextContent
from middleware_helpers import next_call, texts
from ragbudget import TokenCounter
from ragbudget.limits import Walls
from ragbudget.middleware import TokenBudgetMiddleware
from ragbudget.pages.json_trim import dumps
from ragbudget.pages.remainder import join_pages

WORDS = st.text(
    alphabet=st.sampled_from(list('abcdefghij klmnop.,:;é中🙂\n\t"\\{}[]')), max_size=1200
)
SCALARS = st.none() | st.booleans() | st.integers(-(10**12), 10**12) | WORDS
JSON = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=40)
        | st.dictionaries(st.text(alphabet="abcxyz_", max_size=6), inner, max_size=6)
    ),
    max_leaves=100,
)
LISTS = st.builds(
    lambda items, times: items * times, st.lists(JSON, min_size=1, max_size=20), st.integers(1, 40)
)
RESULTS = LISTS | st.dictionaries(
    st.text(alphabet="abcxyz_", max_size=6), LISTS | JSON, min_size=1, max_size=5
)
"""What tools return: a list, or an object, of random JSON values (repeated to be long)."""
TEXTS = st.builds(
    lambda lines, times: "\n".join(lines * times),
    st.lists(WORDS, min_size=1, max_size=30),
    st.integers(1, 60),
)
BUDGETS = st.integers(min_value=128, max_value=500)
pytestmark = pytest.mark.filterwarnings("ignore::hypothesis.errors.HypothesisWarning")
"""Hypothesis warns when a failing example is large to print; the failure is what matters."""

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _visible(result: ToolResult, counter: TokenCounter) -> int:
    return sum(
        counter.count(block.text) for block in result.content if isinstance(block, TextContent)
    )


def _walk(middleware: TokenBudgetMiddleware, first: ToolResult, counter: TokenCounter) -> list[str]:
    """Every continuation page body, each checked within the budget."""
    call = next_call(texts(first)[-1])
    assert call is not None
    bodies = []
    while call is not None:
        page = middleware.page(*call)
        assert _visible(page, counter) <= middleware.max_tokens
        body, notice = texts(page)
        bodies.append(body)
        call = next_call(notice)
    return bodies


@pytest.mark.slow
@SETTINGS
@given(value=RESULTS, budget=BUDGETS)
def test_json_results(value: Any, budget: int, exact_counter: TokenCounter) -> None:
    structured = value if isinstance(value, dict) else {"result": value}
    result = ToolResult(
        content=[TextContent(type="text", text=dumps(value))], structured_content=structured
    )
    middleware = TokenBudgetMiddleware(budget, counter=exact_counter)
    if middleware.guard.within(result, budget):
        return
    cut = middleware.guard.cut(result, budget, "random").result
    assert _visible(cut, exact_counter) <= budget
    shown = json.loads(texts(cut)[0])
    assert cut.structured_content is None  # a cut result is text only: every client reads it
    assert result.structured_content == structured  # the tool's own result is not changed
    if len(cut.content) == 1:  # the text alone fits once its mirror is dropped: sent whole
        assert texts(cut) == [dumps(value)]
        return
    pages = [json.loads(body) for body in _walk(middleware, cut, exact_counter)]
    assert join_pages(shown, pages) == value


@SETTINGS
@given(text=TEXTS, budget=BUDGETS)
def test_text_results(text: str, budget: int, exact_counter: TokenCounter) -> None:
    result = ToolResult(content=[TextContent(type="text", text=text)])
    middleware = TokenBudgetMiddleware(budget, counter=exact_counter)
    if middleware.guard.within(result, budget):
        return
    cut = middleware.guard.cut(result, budget, "random").result
    assert _visible(cut, exact_counter) <= budget
    first = texts(cut)[0]
    assert text.startswith(first)
    if "\n" in text[: len(first)]:  # a line boundary was there to cut at
        assert first.endswith("\n") or first == text
    assert "".join([first, *_walk(middleware, cut, exact_counter)]) == text


@pytest.mark.parametrize("blocks", [2, 5])
def test_several_text_blocks_count_together(blocks: int, exact_counter: TokenCounter) -> None:
    part = "".join(f"line {i} of a block\n" for i in range(400))
    result = ToolResult(content=[TextContent(type="text", text=part) for _ in range(blocks)])
    middleware = TokenBudgetMiddleware(1000, counter=exact_counter)
    assert not middleware.guard.within(result, 1000)
    cut = middleware.guard.cut(result, 1000, "blocks").result
    assert _visible(cut, exact_counter) <= 1000
    whole = "".join([texts(cut)[0], *_walk(middleware, cut, exact_counter)])
    assert whole == "\n\n".join([part] * blocks)


WALLS = st.builds(
    Walls,
    tokens=st.integers(128, 600),
    chars=st.none() | st.integers(1024, 3000),
    bytes=st.none() | st.integers(1024, 3000),
)


def _within(parts: list[str], walls: Walls, counter: TokenCounter) -> bool:
    tokens = sum(counter.count(part) for part in parts)
    chars = sum(len(part) for part in parts)
    size = sum(len(part.encode("utf-8", "surrogatepass")) for part in parts)
    return (
        tokens <= walls.tokens
        and (walls.chars is None or chars <= walls.chars)
        and (walls.bytes is None or size <= walls.bytes)
    )


@pytest.mark.slow  # ~2.5 s of CPU
@SETTINGS
@given(value=RESULTS | TEXTS, walls=WALLS, mirror=st.booleans())
def test_every_result_and_page_stops_at_the_first_wall(
    value: Any, walls: Walls, mirror: bool, exact_counter: TokenCounter
) -> None:
    """For random walls and results (text or JSON, with or without structured content that
    mirrors it): the text blocks plus the structured content as sent fit every wall, and so
    does each page; the pages rebuild the result."""
    text = value if isinstance(value, str) else dumps(value)
    structured = None
    if mirror:
        structured = value if isinstance(value, dict) else {"result": value}
    result = ToolResult(
        content=[TextContent(type="text", text=text)], structured_content=structured
    )
    middleware = TokenBudgetMiddleware(walls=walls, counter=exact_counter)
    guard = middleware.guard
    if guard.within(result, walls.tokens):
        assert _within([text] + ([dumps(structured)] if mirror else []), walls, exact_counter)
        return
    cut = guard.cut(result, walls.tokens, "random").result
    parts = texts(cut) + ([] if cut.structured_content is None else [dumps(cut.structured_content)])
    assert _within(parts, walls, exact_counter)
    call, bodies = next_call(texts(cut)[-1]), []
    while call is not None:
        page = middleware.page(*call)
        assert _within(texts(page), walls, exact_counter)
        body, notice = texts(page)
        bodies.append(body)
        call = next_call(notice)
    first = texts(cut)[0]
    if isinstance(value, str):
        assert "".join([first, *bodies]) == value
    elif first.startswith(("[", "{")) and next_call(texts(cut)[-1]) is not None:
        assert join_pages(json.loads(first), [json.loads(b) for b in bodies]) == value
