"""`ragbudget serve` runs the core's TokenBudgetMiddleware over its own tools."""

from __future__ import annotations

from pathlib import Path

from fastmcp import Client
from mcp_helpers import text_blocks, visible_tokens
from ragbudget import TokenCounter
from ragbudget.middleware import TokenBudgetMiddleware
from ragbudget_server.mcp import ServerSettings, create_server
from ragbudget_server.store import DocumentStore


async def test_ragbudget_serve_guards_its_own_results(
    shared_store: DocumentStore, exact_counter: TokenCounter, bomb: Path
) -> None:
    settings = ServerSettings(max_tokens_ceiling=3000)
    server = create_server(settings, store=shared_store)
    (guard,) = [m for m in server.middleware if isinstance(m, TokenBudgetMiddleware)]
    # The guard's limit has slack over the ceiling: it never cuts an answer a tool fitted.
    assert guard.max_tokens == 3750 and guard.counter.name == shared_store.counter.name

    @server.tool
    def overshoot() -> str:  # a tool that forgot its budget
        return "2026-11-23T12:00:00Z INFO worker GET /api/v1/items status=200\n" * 6500

    async with Client(server) as client:
        assert "more" not in {tool.name for tool in await client.list_tools()}
        page = await client.call_tool("read_document", {"source": str(bomb), "max_tokens": 10**6})
        assert page.meta is not None and "ragbudget_cut" not in page.meta
        cut = await client.call_tool("overshoot")
    assert visible_tokens(cut, exact_counter) <= 3750
    assert "Ask for less" in text_blocks(cut)[-1]
