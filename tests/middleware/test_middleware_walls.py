"""Issue 38: each client's walls, by the name it sends, on everything a model may read.

Through fastmcp's in-memory client with each profile's client name and the middleware at its
defaults (the `exact` counter, with bpe-openai installed): every result and every page within the profile's
walls by exact o200k and cl100k, characters and bytes, counted on the text blocks plus the
structured content as sent; pages still rebuild the original exactly.
"""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import mcp_types as mt
import pytest
from fastmcp import Client, FastMCP
from fastmcp.exceptions import ToolError
from fastmcp.tools import ToolResult
from mcp_types import TextContent
from ragbudget.limits import DEFAULT_PROFILE, PROFILES, Walls, profile_for
from ragbudget.middleware import TokenBudgetMiddleware
from ragbudget.middleware.clients import CLIENT_INFO_META_KEY, client_name
from ragbudget.pages.remainder import find_more_call, join_pages
from third_party_server import ITEMS, LOG, NESTED, UNICODE, build_server
from walls_check import over, read_all, readable

NAMES = {
    "claude-code": "claude-code",
    "codex": "codex-mcp-client",
    "copilot-cli": "github-copilot-developer",  # what Copilot CLI sends (copilot-cli#1268)
    "default": "some-new-agent",
}
"""A `clientInfo.name` each profile picks."""


def _client(server: FastMCP[Any], name: str, **options: Any) -> Client[Any]:
    info = mt.Implementation(name=name, version="1.0")
    return Client(server, client_info=info, **options)


@pytest.mark.parametrize("profile", sorted(NAMES))
async def test_each_client_gets_its_profiles_walls(profile: str) -> None:
    walls = profile_for(NAMES[profile]).walls()
    assert profile_for(NAMES[profile]).name == profile
    server = build_server()
    server.add_middleware(TokenBudgetMiddleware())
    async with _client(server, NAMES[profile]) as client:
        log = await client.call_tool("read_log")
        assert over(log, walls) == []
        assert log.structured_content is None  # a cut result is text only
        notice = readable(log)[-1]
        assert f"bound; profile {profile})" in notice
        assert "".join([log.content[0].text, *await read_all(client, log, walls)]) == LOG
        items = await client.call_tool("list_items")
        assert over(items, walls) == []
        assert items.structured_content is None and json.loads(items.content[0].text)
        pages = [json.loads(b) for b in await read_all(client, items, walls)]
        assert join_pages(json.loads(items.content[0].text), pages) == ITEMS
        for tool in ("account_tree", "greetings", "report", "strict_rows", "screenshot"):
            assert over(await client.call_tool(tool), walls) == [], tool


async def test_copilot_stops_at_its_byte_wall_and_says_so() -> None:
    server = build_server()
    server.add_middleware(TokenBudgetMiddleware(max_tokens=9_000, counter="tiktoken:o200k_base"))
    async with _client(server, "github-copilot-cli") as client:
        result = await client.call_tool("greetings")  # multi-byte text: bytes bind first
    notice = result.content[-1].text
    assert "cut to fit 9,000 tokens, 10,000 bytes (bytes bound; profile copilot-cli)" in notice
    assert over(result, Walls(9_000, bytes=10_000)) == []
    assert UNICODE.startswith(result.content[0].text)


async def test_fixed_walls_and_profile_override_the_clients_name() -> None:
    server = build_server()
    server.add_middleware(TokenBudgetMiddleware(client="codex"))
    async with _client(server, "claude-code") as client:
        notice = (await client.call_tool("read_log")).content[-1].text
    assert "profile codex" in notice
    fixed = Walls(3_000, chars=8_000)
    server = build_server()
    server.add_middleware(TokenBudgetMiddleware(walls=fixed, tool_budgets={"greetings": 1_000}))
    async with _client(server, "claude-code") as client:
        log = await client.call_tool("read_log")
        assert "walls set by the server" in log.content[-1].text
        assert over(log, fixed) == []
        greetings = await client.call_tool("greetings")
        assert over(greetings, fixed.with_tokens(1_000)) == []


async def test_default_profile_for_an_unknown_client() -> None:
    middleware = TokenBudgetMiddleware()
    assert middleware.max_tokens == DEFAULT_PROFILE.tokens
    assert middleware.counter.name == "exact"  # bpe-openai comes with ragbudget[fastmcp]
    estimated = TokenBudgetMiddleware(counter="estimate")
    assert estimated.counter.name == "estimate+15%"  # the estimate's margin
    assert {p.name for p in PROFILES} >= set(NAMES) - {"default"}


def _context(meta: Any, session_name: str | None) -> Any:
    """A stand-in for a fastmcp `Context`: the request's `_meta` and the session's
    `initialize` params (None: no handshake)."""
    params = None if session_name is None else SimpleNamespace(client_info=mt.Implementation(
        name=session_name, version="1"))  # fmt: skip
    session = SimpleNamespace(client_params=params)
    return SimpleNamespace(request_context=SimpleNamespace(meta=meta, session=session))


@pytest.mark.parametrize(
    ("meta", "session_name", "name"),
    [({CLIENT_INFO_META_KEY: {"name": "codex-mcp-client", "version": "1"}}, "claude-code",
      "codex-mcp-client"),  # the request's own name first (2026-07-28)
     ({CLIENT_INFO_META_KEY: {"name": "codex-mcp-client"}}, None, "codex-mcp-client"),
     ({}, "claude-code", "claude-code"),  # handshake era: the session's
     (None, "claude-code", "claude-code"),
     ({CLIENT_INFO_META_KEY: {"name": ""}}, "claude-code", "claude-code"),  # empty: no name
     ({CLIENT_INFO_META_KEY: "codex"}, None, None),
     ({}, "", None),
     ({}, None, None)],
)  # fmt: skip
def test_client_name_reads_the_request_first_then_the_session(
    meta: Any, session_name: str | None, name: str | None
) -> None:
    assert client_name(_context(meta, session_name)) == name
    assert client_name(None) is None
    assert client_name(SimpleNamespace(request_context=None)) is None
    assert CLIENT_INFO_META_KEY == mt.CLIENT_INFO_META_KEY  # the core's copy of the SDK's key


@pytest.mark.slow  # a 40,000-token error paged back whole: ~3 s of CPU
async def test_a_huge_tool_error_is_budgeted_and_stays_an_error() -> None:
    """Regression: `ToolError("tool error " * 20000)` at a 2,000 budget came back whole
    (40,001 tokens)."""
    message = "tool error " * 20000
    server: FastMCP[Any] = FastMCP("errors")

    @server.tool
    def fails() -> str:
        raise ToolError(message)

    @server.tool
    def crashes() -> str:
        raise RuntimeError("boom\n" * 30000)

    server.add_middleware(TokenBudgetMiddleware(2_000))
    walls = Walls(2_000, chars=DEFAULT_PROFILE.chars)
    async with Client(server) as client:
        raw = await client.call_tool_mcp("fails", {})
        assert raw.is_error and over(raw, walls) == []
        text = raw.content[0].text
        body, notice = text.rsplit("\n\n[ragbudget:", 1)
        assert message.startswith(body) and "cut to fit 2,000 tokens" in notice
        call = find_more_call(notice)
        assert call is not None  # the rest of the message pages back
        rest = await read_all(
            client, ToolResult(content=[TextContent(type="text", text=notice)]), walls
        )
        assert body + "".join(rest) == message
        crashed = await client.call_tool_mcp("crashes", {})
        assert crashed.is_error and over(crashed, walls) == []
        with pytest.raises(ToolError, match="cut to fit 2,000 tokens"):
            await client.call_tool("fails")


async def test_structured_content_is_budgeted_when_the_text_fits() -> None:
    """Regression: a short text with 81,003 tokens of structured content passed untouched at
    a 2,000 budget."""
    rows = [{"n": i, "label": f"row {i} of the table"} for i in range(9000)]
    server: FastMCP[Any] = FastMCP("structured")

    @server.tool
    def table() -> ToolResult:
        return ToolResult(
            content=[TextContent(type="text", text="9,000 rows")],
            structured_content={"rows": rows, "total": 9000},
        )

    server.add_middleware(TokenBudgetMiddleware(2_000))
    async with Client(server) as client:
        result = await client.call_tool("table")
    assert over(result, Walls(2_000)) == []
    assert result.content[0].text == "9,000 rows"  # the text is whole
    assert result.structured_content is None  # sent as JSON text, cut as JSON
    shown = json.loads(result.content[1].text)
    assert shown["total"] == 9000 and shown["rows"] == rows[: len(shown["rows"])]
    assert "$.rows: kept" in result.content[-1].text


async def test_the_nested_mirror_keeps_matching_and_pages_back() -> None:
    server = build_server()
    server.add_middleware(TokenBudgetMiddleware(3_000, counter="tiktoken:cl100k_base"))
    async with Client(server) as client:
        result = await client.call_tool("account_tree")
        shown = json.loads(result.content[0].text)
        assert result.structured_content is None
        assert over(result, Walls(3_000, chars=DEFAULT_PROFILE.chars)) == []
        pages = [json.loads(b) for b in await read_all(client, result, Walls(3_000))]
    assert join_pages(shown, pages) == NESTED


@pytest.mark.parametrize("unit", ["u\ufeff", "ix\u00ad", "\u00a0kqzv ", "αbцд漢x "])
async def test_text_crafted_against_the_estimate_stays_within_the_walls(unit: str) -> None:
    """The estimate's worst cases (1.3-1.6x its count by both tokenizers) at the defaults:
    the middleware counts with `exact`, so each page is within the walls and pages rebuild it."""
    text = (unit * (78 // len(unit)) + "\n") * 800
    server: FastMCP[Any] = FastMCP("crafted")

    @server.tool
    def crafted() -> str:
        return text

    server.add_middleware(TokenBudgetMiddleware())
    walls = profile_for(NAMES["claude-code"]).walls()
    async with _client(server, NAMES["claude-code"]) as client:
        result = await client.call_tool("crafted")
        assert over(result, walls) == []
        assert "".join([result.content[0].text, *await read_all(client, result, walls)]) == text
