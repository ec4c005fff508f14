"""What an agent reads, through each real transport and in both formats: within budget by an
exact counter, structured content valid against the declared output schema, and paging by
`offset` with no repeats and no gaps."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client
from fastmcp.client.transports import StdioTransport
from mcp_helpers import (
    COUNTER_SPEC,
    http_server,
    page_of,
    serve_command,
    text_blocks,
    visible_tokens,
)
from processes import server_env
from ragbudget import TokenCounter
from ragbudget_server.mcp import ServerSettings, create_server
from ragbudget_server.mcp.answers import SearchAnswer
from ragbudget_server.store import DocumentStore

QUERY = "string formatting operations"
BUDGET = 900


@asynccontextmanager
async def _client(
    transport: str, store: DocumentStore, store_dir: Path
) -> AsyncIterator[Client[Any]]:
    args = ["--db", str(store_dir), "--counter", COUNTER_SPEC]
    if transport == "memory":
        server = create_server(ServerSettings(db=store_dir, counter=COUNTER_SPEC), store=store)
        async with Client(server) as client:
            yield client
    elif transport == "stdio":
        command = serve_command()
        stdio = StdioTransport(
            command=command[0], args=[*command[1:], *args], env=server_env(), keep_alive=False
        )
        async with Client(stdio) as client:
            yield client
    else:
        with http_server(args, server_env()) as url:
            async with Client(url) as client:
                yield client


async def _walk(
    client: Client[Any], args: dict[str, Any], format: str, counter: TokenCounter, most: int
) -> list[str]:
    """The ids a cursor walk accounts for (shown, merged into a span, or a duplicate), page by
    page until `most` ids or the end; every page within its budget, text only."""
    seen: list[str] = []
    cursor: str | None = None
    while len(seen) < most:
        call = {**args, "format": format} | ({"cursor": cursor} if cursor else {})
        result = await client.call_tool_mcp("search", call)
        assert not result.is_error, text_blocks(result)
        assert result.structured_content is None
        assert visible_tokens(result, counter) <= args.get("max_tokens", 8192)
        page = SearchAnswer.model_validate(page_of(result))
        assert page.format == format and page.offset == len(seen)
        seen += page.accounted_ids()
        cursor = page.next_cursor
        if cursor is None:
            break
        assert f'cursor="{cursor}"' in text_blocks(result)[-1] or format == "json"
    return seen


@pytest.mark.parametrize(
    "transport",
    ["memory", pytest.param("stdio", marks=pytest.mark.process),
     pytest.param("http", marks=pytest.mark.process)],
)  # fmt: skip
async def test_pages_fit_validate_and_continue_without_repeats_or_gaps(
    transport: str, shared_store: DocumentStore, store_dir: Path, exact_counter: TokenCounter
) -> None:
    async with _client(transport, shared_store, store_dir) as client:
        (search,) = [t for t in await client.list_tools() if t.name == "search"]
        assert search.output_schema is None  # text only: whatever field a client forwards
        # The ranking the first page's cursor keeps (made once, whatever this server's
        # Chroma orders in its approximate tail): concise snippets of all 60 take a page or two.
        concise = {"query": QUERY, "limit": 60, "concise": True}
        ranking = (await _walk(client, concise, "json", exact_counter, 60))[:60]
        assert len(ranking) == 60
        for format in ("text", "json"):
            args = {"query": QUERY, "limit": 60, "max_tokens": BUDGET}
            seen = await _walk(client, args, format, exact_counter, 45)
            assert len(set(seen)) == len(seen), format  # no repeats
            assert sorted(seen) == sorted(ranking[: len(seen)]), format  # no gaps
            assert len(seen) >= 45, format  # several pages at this budget
