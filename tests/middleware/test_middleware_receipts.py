"""`TokenBudgetMiddleware.vouch`: a count the server measured passes uncounted; no other does.

The server that holds the middleware files a receipt for the result object it returns; a tool
cannot forge one (a count in `_meta`, in structured content, a copy of a vouched result, or a
vouched result changed afterwards are all measured as any result is).
"""

from __future__ import annotations

import gc
from typing import Any

import pytest
from fastmcp import Client, FastMCP
from fastmcp.tools import ToolResult
from mcp_types import TextContent
from middleware_helpers import texts, visible
from ragbudget import TokenCounter
from ragbudget.middleware import TokenBudgetMiddleware
from ragbudget.middleware.counts import Receipts

BUDGET = 300
LONG = "line of a log that goes on and on\n" * 400
"""About 3,200 tokens (cl100k): over the budget."""
SHORT = "a short answer the server measured\n" * 4


class Counting:
    """A counter that records every text it counts (the exact counts come from `inner`)."""

    exact = True

    def __init__(self, inner: TokenCounter) -> None:
        self.inner, self.name, self.texts = inner, inner.name, list[str]()

    def count(self, text: str) -> int:
        self.texts.append(text)
        return self.inner.count(text)


def _result(text: str, **extra: Any) -> ToolResult:
    return ToolResult(content=[TextContent(type="text", text=text)], **extra)


def _server(counter: Counting) -> tuple[FastMCP[Any], TokenBudgetMiddleware]:
    """A server whose own tools vouch for their results, and tools that try to forge a count."""
    server: FastMCP[Any] = FastMCP("receipts")
    guard = TokenBudgetMiddleware(BUDGET, counter=counter, continuation=False)

    @server.tool
    def measured(over: bool = False) -> ToolResult:  # the server's own, budgeted tool
        result = _result(LONG if over else SHORT)
        guard.vouch(result, tokens=counter.count(texts(result)[0]), counter=counter.name)
        return result

    @server.tool
    def other_counter() -> ToolResult:  # measured by the server with another counter
        result = _result(SHORT)
        guard.vouch(result, tokens=10**6, counter="estimate+10%")
        return result

    @server.tool
    def forged_meta() -> ToolResult:  # a count in `_meta`, as the ragbudget tools report theirs
        return _result(LONG, meta={"ragbudget": {"text_tokens": 1, "counter": counter.name}})

    @server.tool
    def forged_structured() -> ToolResult:  # a count as a store response carries it
        return _result(LONG, structured_content={"used_tokens": 1, "max_tokens": BUDGET})

    @server.tool
    def copied() -> ToolResult:  # a copy of a vouched result is not the vouched object
        result = _result(LONG)
        guard.vouch(result, tokens=1, counter=counter.name)
        return result.model_copy(deep=True)

    @server.tool
    def changed() -> ToolResult:  # a vouched result whose text changed afterwards
        result = _result(SHORT)
        guard.vouch(result, tokens=1, counter=counter.name)
        result.content.append(TextContent(type="text", text=LONG))
        return result

    server.add_middleware(guard)
    return server, guard


@pytest.fixture
def counter(exact_counter: TokenCounter) -> Counting:
    return Counting(exact_counter)


async def test_a_vouched_result_passes_without_a_second_count(counter: Counting) -> None:
    server, guard = _server(counter)
    async with Client(server) as client:
        result = await client.call_tool("measured")
    assert texts(result) == [SHORT]
    assert counter.texts == [SHORT]  # the tool's own count, and no other
    assert len(guard.receipts) == 0  # used up


async def test_a_vouched_count_by_another_counter_is_the_servers_check(
    counter: Counting,
) -> None:
    server, _ = _server(counter)
    async with Client(server) as client:
        result = await client.call_tool("other_counter")
    assert texts(result) == [SHORT] and counter.texts == []


async def test_a_vouched_count_over_the_budget_is_still_cut(
    counter: Counting, exact_counter: TokenCounter
) -> None:
    server, _ = _server(counter)
    async with Client(server) as client:
        result = await client.call_tool("measured", {"over": True})
    assert visible(result, exact_counter) <= BUDGET
    assert "cut to fit 300 tokens" in texts(result)[-1]


@pytest.mark.parametrize("tool", ["forged_meta", "forged_structured", "copied", "changed"])
async def test_a_count_a_tool_could_forge_is_not_trusted(
    tool: str, counter: Counting, exact_counter: TokenCounter
) -> None:
    server, guard = _server(counter)
    async with Client(server) as client:
        result = await client.call_tool(tool)
    assert visible(result, exact_counter) <= BUDGET
    assert "cut to fit 300 tokens" in texts(result)[-1]
    assert LONG in counter.texts  # measured here, as any result
    del result
    gc.collect()
    assert len(guard.receipts) == 0  # the copied tool's original died: its receipt went too


def test_a_receipt_holds_for_its_own_object_as_measured_and_once() -> None:
    receipts = Receipts()
    result = _result(SHORT)
    receipts.file(result, 7, "chars:4")
    assert receipts.redeem(_result(SHORT)) is None  # same text, another object
    receipt = receipts.redeem(result)
    assert receipt is not None and (receipt.tokens, receipt.counter) == (7, "chars:4")
    assert receipts.redeem(result) is None  # once
    receipts.file(result, 7, "chars:4")
    result.content[0] = TextContent(type="text", text=LONG)
    assert receipts.redeem(result) is None  # changed since it was measured


def test_a_receipt_goes_with_its_result_and_checks_its_arguments() -> None:
    receipts = Receipts()
    receipts.file(_result(SHORT), 7, "chars:4")  # the result dies at once
    gc.collect()
    assert len(receipts) == 0
    with pytest.raises(ValueError, match="tokens must be >= 0"):
        receipts.file(_result(SHORT), -1, "chars:4")
    with pytest.raises(TypeError, match="must be a fastmcp ToolResult"):
        receipts.file("text", 7, "chars:4")  # type: ignore[arg-type]
