"""MCP 2026-07-28 for the middleware: logs only when asked, handle lifetimes, no global state,
and a server's own continuation-named tool never silently replaced."""

from __future__ import annotations

import warnings
from typing import Any

import pytest
from fastmcp import Client, FastMCP
from fastmcp.exceptions import ToolError
from mcp.shared.exceptions import MCPError
from ragbudget.middleware import TokenBudgetMiddleware
from third_party_server import build_server


def _guarded(**options: Any) -> FastMCP[Any]:
    server = build_server()
    server.add_middleware(TokenBudgetMiddleware(2_000, counter="tiktoken:cl100k_base", **options))
    return server


async def _logs(client: Client[Any], received: list[str]) -> list[str]:
    async with client:
        await client.call_tool("list_items")
    return received


@pytest.mark.parametrize(("mode", "asked", "sent"), [
    ("auto", "debug", 1),  # 2026-07-28, the request asked for logs
    ("auto", None, 0),  # 2026-07-28, it did not: nothing is sent
    ("auto", "error", 0),  # it asked for errors only: a cut's warning is not one
    ("legacy", None, 1),  # handshake era: its own rules, as before
])  # fmt: skip
async def test_a_cut_is_logged_to_the_client_only_when_the_request_asked(
    mode: str, asked: str | None, sent: int
) -> None:
    received: list[str] = []

    async def on_log(message: Any) -> None:
        received.append(str(message.data))

    client: Client[Any] = Client(_guarded(), log_handler=on_log, mode=mode)  # type: ignore[arg-type]
    client._session_kwargs["log_level"] = asked  # fastmcp's Client always asks for "debug"
    assert len(await _logs(client, received)) == sent


async def test_no_warning_filter_is_changed_during_a_request() -> None:
    before = list(warnings.filters)
    during: list[list[Any]] = []

    async def on_log(message: Any) -> None:  # runs while the middleware reports the cut
        during.append(list(warnings.filters))

    async with Client(_guarded(), log_handler=on_log) as client:
        await client.call_tool("read_log")
    assert during and all(filters == before for filters in during)


async def test_the_more_tool_states_a_handles_lifetime_and_an_expired_one_is_an_error() -> None:
    async with Client(_guarded(cache_ttl=600)) as client:
        tools = {tool.name: tool for tool in await client.list_tools()}
        description = tools["more"].description or ""
        assert "A handle lives 10 minutes after its last use" in description
        assert "call the original tool again" in description
        with pytest.raises(ToolError, match=r"unknown or expired .* call the original tool again"):
            await client.call_tool("more", {"handle": "gone", "offset": 0})


async def test_a_servers_own_more_tool_is_never_silently_replaced() -> None:
    server = build_server()

    @server.tool
    def more(page: int = 0) -> str:
        """The server's own paging."""
        return f"page {page}"

    server.add_middleware(TokenBudgetMiddleware(2_000))
    async with Client(server) as client:
        with pytest.raises(MCPError, match=r"own tool named 'more'.*more_tool="):
            await client.list_tools()
        with pytest.raises(ToolError, match=r"own tool named 'more'.*more_tool="):
            await client.call_tool("more", {"page": 1})
    renamed = build_server()
    renamed.tool(more)
    renamed.add_middleware(TokenBudgetMiddleware(2_000, more_tool="next_page"))
    async with Client(renamed) as client:
        names = {tool.name for tool in await client.list_tools()}
        assert {"more", "next_page"} <= names
        assert (await client.call_tool("more", {"page": 2})).data == "page 2"
        notice = (await client.call_tool("read_log")).content[-1].text
        assert 'next_page(handle="' in notice


async def test_without_continuation_a_servers_more_tool_is_its_own() -> None:
    server = build_server()

    @server.tool
    def more() -> str:
        return "mine"

    server.add_middleware(TokenBudgetMiddleware(2_000, continuation=False))
    async with Client(server) as client:
        assert (await client.call_tool("more")).data == "mine"
