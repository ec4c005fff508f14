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
from mcp_helpers import COUNTER_SPEC, http_server, page_of, serve_command, visible_tokens
from processes import server_env
from ragbudget import TokenCounter
from ragbudget_server.mcp import ServerSettings, create_server
from ragbudget_server.mcp.answers import SearchAnswer
from ragbudget_server.store import DocumentStore

QUERY = "string formatting operations"
BUDGET = 900
PAGES = 4


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
        # The ranking as this server's Chroma gives it (its approximate search, opened from
        # disk, may order the tail unlike the process that built the index): concise snippets
        # of all 60 take a page or two (each result's ids and lines come with it).
        ranking: list[str] = []
        at: int | None = 0
        while at is not None and at < 60:
            part = await client.call_tool_mcp(
                "search",
                {"query": QUERY, "limit": 60 - at, "offset": at, "concise": True, "format": "json"},
            )
            page = SearchAnswer.model_validate(page_of(part))
            ranking += [r.id for r in page.results]
            at = page.next_offset
        assert len(ranking) == 60
        for format in ("text", "json"):
            seen: list[str] = []
            offset: int | None = 0
            for _ in range(PAGES):
                assert offset is not None
                # limit + offset stays 60: Chroma's approximate search ranks its tail by n
                args = {"query": QUERY, "limit": 60 - offset, "max_tokens": BUDGET,
                        "offset": offset, "format": format}  # fmt: skip
                result = await client.call_tool_mcp("search", args)
                assert not result.is_error
                assert visible_tokens(result, exact_counter) <= BUDGET
                assert result.structured_content is None
                page = SearchAnswer.model_validate(page_of(result))
                assert page.format == format and page.offset == offset
                assert page.next_offset in (None, offset + len(page.accounted_ids()))
                seen += page.accounted_ids()  # shown, merged into a span, or a duplicate
                offset = page.next_offset
                if offset is None:
                    break
            assert len(set(seen)) == len(seen), format  # no repeats
            assert sorted(seen) == sorted(ranking[: len(seen)]), format  # no gaps
            assert len(seen) >= PAGES
