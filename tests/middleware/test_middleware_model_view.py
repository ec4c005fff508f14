"""A cut result's notice and handle reach the model of every client, whichever field it reads.

Claude Code, Codex, VS Code, Cursor and pydantic-ai give their model `JSON.stringify(
structuredContent)` when a result has it and drop the text blocks; Gemini CLI reads only the
text; some clients send both. Tools with an output schema (a str, list, dict or model return,
which fastmcp mirrors as structured content) and without one (a `ToolResult` with structured
content of its own) are called through `TokenBudgetMiddleware` by clients sending each
profile's name. Under each of the three rules the model's view holds the cut's notice and the
`more(handle=...)` call, and is within the profile's walls by exact o200k and cl100k,
characters and bytes; walking the handle gives back what the tool returned.
"""

from __future__ import annotations

import json
from typing import Any

import mcp_types as mt
import pytest
from fastmcp import Client, FastMCP
from fastmcp.tools import ToolResult
from mcp_types import TextContent
from middleware_helpers import join_pages, texts
from ragbudget.limits import profile_for
from ragbudget.middleware import TokenBudgetMiddleware
from ragbudget.pages.json_trim import dumps
from ragbudget.pages.remainder import find_more_call
from third_party_server import ITEMS, LOG, build_server
from walls_check import REAL

RULES = ("text", "structured", "both")
"""The text blocks only; the structured content when present, else the text; both."""

CLIENTS = ("claude-code", "codex-mcp-client", "gemini-cli-mcp-client", "some-other-agent")
"""`clientInfo.name`s picking the Claude Code, Codex, Gemini CLI and default profiles."""

ROWS = [{"n": i, "label": f"row {i} of the table"} for i in range(5000)]


def _view(result: Any, rule: str) -> str:
    text = "\n".join(b.text for b in result.content if isinstance(b, TextContent))
    if rule == "text" or result.structured_content is None:
        return text
    wire = json.dumps(result.structured_content, ensure_ascii=False, separators=(",", ":"))
    return wire if rule == "structured" else f"{text}\n{wire}"


def _server() -> FastMCP[Any]:
    server = build_server()

    @server.tool
    def table() -> ToolResult:
        """5,000 rows as structured content of its own, no output schema."""
        return ToolResult(
            content=[TextContent(type="text", text="5,000 rows")],
            structured_content={"rows": ROWS, "total": 5000},
        )

    server.add_middleware(TokenBudgetMiddleware(counter="tiktoken:cl100k_base"))
    return server


async def _walk(client: Client[Any], first: Any) -> list[str]:
    bodies, call = [], find_more_call(texts(first)[-1])
    while call is not None:
        page = await client.call_tool("more", {"handle": call[0], "offset": call[1]})
        body, notice = texts(page)
        bodies.append(body)
        call = find_more_call(notice)
    return bodies


@pytest.mark.slow
@pytest.mark.parametrize("name", CLIENTS)
async def test_every_rule_shows_the_cut_notice_and_handle_within_the_walls(name: str) -> None:
    walls = profile_for(name).walls()
    async with Client(_server(), client_info=mt.Implementation(name=name, version="1")) as client:
        listed = {tool.name: tool for tool in await client.list_tools()}
        assert listed["list_items"].output_schema is None  # no schema a cut would break
        cuts = {
            "read_log": await client.call_tool("read_log"),
            "list_items": await client.call_tool("list_items"),
            "report": await client.call_tool("report", {"rows": 4000}),
            "table": await client.call_tool("table"),
        }
        for tool, result in cuts.items():
            for rule in RULES:
                view = _view(result, rule)
                assert "[ragbudget: cut to fit" in view and "more(handle=" in view, (tool, rule)
                for counter in REAL:
                    assert counter.count(view) <= walls.tokens, (tool, rule, counter.name)
                if walls.chars is not None:
                    assert len(view) <= walls.chars, (tool, rule)
                if walls.bytes is not None:
                    assert len(view.encode()) <= walls.bytes, (tool, rule)
        log_pages = await _walk(client, cuts["read_log"])
        table_pages = await _walk(client, cuts["table"])
    assert texts(cuts["read_log"])[0] + "".join(log_pages) == LOG
    lead, body, _ = texts(cuts["table"])
    assert lead == "5,000 rows"  # the tool's own text, whole, before its rows
    rebuilt = join_pages(json.loads(body), [json.loads(page) for page in table_pages])
    assert rebuilt == {"rows": ROWS, "total": 5000}  # every row once, in order
    items = json.loads(texts(cuts["list_items"])[0])
    assert items == ITEMS[: len(items)]


async def test_a_result_within_the_walls_keeps_its_structured_content() -> None:
    async with Client(_server()) as client:
        result = await client.call_tool("status")
    assert result.structured_content == json.loads(texts(result)[0])
    assert dumps(result.structured_content)  # a structured-content client reads it whole
