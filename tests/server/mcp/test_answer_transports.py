"""What an agent reads, through each real transport and in both formats: within budget by an
exact counter, structured content valid against the declared output schema, and paging by
`offset` with no repeats and no gaps."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from fastmcp import Client
from fastmcp.client.transports import StdioTransport
from mcp_helpers import COUNTER_SPEC, http_server, serve_command, visible_tokens
from processes import server_env
from ragbudget import TokenCounter
from ragbudget_server.mcp import ServerSettings, create_server
from ragbudget_server.store import DocumentStore, SearchResponse

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
        assert search.output_schema is not None
        # The ranking as this server's Chroma gives it (its approximate search, opened from
        # disk, may order the tail unlike the process that built the index): concise snippets
        # of all 60 fit one page.
        whole = await client.call_tool_mcp(
            "search", {"query": QUERY, "limit": 60, "concise": True, "format": "json"}
        )
        ranking = [r.id for r in SearchResponse.model_validate(whole.structured_content).results]
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
                jsonschema.validate(result.structured_content, search.output_schema)
                page = SearchResponse.model_validate(result.structured_content)
                assert page.format == format and page.offset == offset
                assert page.next_offset in (None, offset + len(page.accounted_ids()))
                seen += page.accounted_ids()  # shown, merged into a span, or a duplicate
                offset = page.next_offset
                if offset is None:
                    break
            assert len(set(seen)) == len(seen), format  # no repeats
            assert sorted(seen) == sorted(ranking[: len(seen)]), format  # no gaps
            assert len(seen) >= PAGES
