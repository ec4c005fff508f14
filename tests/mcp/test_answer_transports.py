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
from mcp_helpers import COUNTER_SPEC, http_server, serve_command, server_env, visible_tokens
from ragbudget import TokenCounter
from ragbudget.mcp import ServerSettings, create_server
from ragbudget.store import DocumentStore, SearchResponse

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


@pytest.mark.parametrize("transport", ["memory", "stdio", "http"])
async def test_pages_fit_validate_and_continue_without_repeats_or_gaps(
    transport: str, shared_store: DocumentStore, store_dir: Path, exact_counter: TokenCounter
) -> None:
    ranking = [c[0] for c in shared_store.candidates(QUERY, limit=60)]
    async with _client(transport, shared_store, store_dir) as client:
        (search,) = [t for t in await client.list_tools() if t.name == "search"]
        assert search.output_schema is not None
        for format in ("text", "json"):
            seen: list[str] = []
            offset: int | None = 0
            for _ in range(PAGES):
                assert offset is not None
                args = {"query": QUERY, "limit": 60, "max_tokens": BUDGET, "offset": offset,
                        "format": format}  # fmt: skip
                result = await client.call_tool_mcp("search", args)
                assert not result.is_error
                assert visible_tokens(result, exact_counter) <= BUDGET
                jsonschema.validate(result.structured_content, search.output_schema)
                page = SearchResponse.model_validate(result.structured_content)
                assert page.format == format and page.offset == offset
                seen += [r.id for r in page.results]
                offset = page.next_offset
                if offset is None:
                    break
            assert seen == ranking[: len(seen)], format  # no repeats, no gaps
            assert len(seen) >= PAGES
