"""What the middleware counts: one count for a result under budget, a few page-sized counts
(never one per line) for a long result over it, with every guarantee kept."""

from __future__ import annotations

import sysconfig
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client, FastMCP
from fastmcp.tools import ToolResult
from mcp_types import TextContent
from middleware_helpers import texts, visible, whole_text
from ragbudget import TokenCounter, get_counter
from ragbudget.middleware import TokenBudgetMiddleware

STDLIB = Path(sysconfig.get_paths()["stdlib"])
CODE = "".join(p.read_text(encoding="utf-8") for p in sorted(STDLIB.glob("*.py"))[:40])[:200_000]


class Counting:
    """A counter that records what it was asked to count (and stops early when its inner one
    does)."""

    def __init__(self, inner: TokenCounter) -> None:
        self.inner, self.name, self.exact = inner, inner.name, inner.exact
        self.stops_early = bool(getattr(inner, "stops_early", False))
        self.sizes: list[int] = []

    def count(self, text: str) -> int:
        self.sizes.append(len(text))
        return self.inner.count(text)

    def count_up_to(self, text: str, limit: int) -> int:
        self.sizes.append(len(text))
        method = getattr(self.inner, "count_up_to", None)
        return self.inner.count(text) if method is None else int(method(text, limit))


def _server(text: str, counter: Counting, budget: int) -> FastMCP[Any]:
    mcp: FastMCP[Any] = FastMCP("counts")

    @mcp.tool
    def read() -> ToolResult:  # text alone: no structured mirror to count beside it
        return ToolResult(content=[TextContent(type="text", text=text)])

    mcp.add_middleware(TokenBudgetMiddleware(budget, counter=counter))
    return mcp


@pytest.mark.parametrize("spec", ["estimate", "tiktoken:o200k_base"])
async def test_a_result_under_budget_is_counted_once(spec: str) -> None:
    counter = Counting(get_counter(spec))
    text = CODE[:6000]
    async with Client(_server(text, counter, 9000)) as client:
        counter.sizes.clear()
        result = await client.call_tool("read")
    assert texts(result) == [text]
    assert counter.sizes == [len(text)]


@pytest.mark.parametrize("spec", ["estimate", "tiktoken:o200k_base"])
async def test_indented_code_over_budget_takes_a_few_page_sized_counts(spec: str) -> None:
    counter = Counting(get_counter(spec))
    exact = get_counter("tiktoken:o200k_base")
    async with Client(_server(CODE, counter, 4000)) as client:
        counter.sizes.clear()
        result = await client.call_tool("read")
        counts = list(counter.sizes)
        assert visible(result, exact) <= 4000 or not counter.exact
        assert texts(result)[0].endswith("\n") and CODE.startswith(texts(result)[0])
        assert await whole_text(client, result, counter, 4000) == CODE
    assert len(counts) <= 16, counts
    assert sum(counts) <= len(CODE) + 12 * len(texts(result)[0]), counts
