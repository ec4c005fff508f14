"""Every answer fits the client that reads it, through the official SDK client.

`ragbudget serve` at its defaults (the store's estimate counter) is asked `search` and
`read_document` at budgets up to far above any wall, by an `mcp.ClientSession` sending each
profile's `clientInfo.name`, and each truncated answer is continued with the cursor or offset
it names. Each answer is rendered as each client rule forwards it (`mcp_helpers.RULES`: the
text blocks, the structured content when present, both): under every rule the model reads the
passages, every result's lines, the notice and the continuation, within that profile's walls:
tokens by exact o200k and cl100k (the token wall is the server's margin-covered estimate, so
an exact count must be within it), characters (UTF-16 units and code points) and UTF-8 bytes.
Log messages come only when a level was asked for.

The server reads the name per request, so one streamable HTTP process serves every profile's
session (each process start costs seconds); the default profile and the log level are asked
over stdio, each in a process of its own (one client a process).
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp_helpers import (
    RULES,
    assert_model_reads_the_answer,
    assert_within_walls,
    http_server,
    listing_of,
    model_view,
    page_of,
    serve_command,
    whole_answer,
)
from mcp_types import Implementation
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from processes import server_env
from ragbudget.limits import DEFAULT_PROFILE, PROFILES, ClientProfile
from ragbudget_server.store import DocumentStore

pytestmark = [pytest.mark.process, pytest.mark.slow]


ASKS = [
    ("search", {"query": "string literal escape sequences", "limit": 200, "max_tokens": 10**6}),
    ("search", {"query": "with statement", "limit": 50, "max_tokens": 30_000, "format": "json"}),
    ("search", {"query": "operator precedence", "limit": 5, "max_tokens": 4000}),
    ("read_document", {"max_tokens": 10**6}),
    ("read_document", {"max_tokens": 20_000, "format": "json", "offset": 4000}),
]


@pytest.fixture(scope="module")
def estimate_db(stdlib: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("walls") / "db"
    store = DocumentStore(path=db)  # as a new user builds it: the estimate counter
    store.ingest([stdlib / "pydoc_data" / "topics.py", stdlib / "json"])
    store.close()
    return db


@pytest.fixture(scope="module")
def walls_url(estimate_db: Path) -> Iterator[str]:
    """One `ragbudget serve --transport http` on the store for the module's sessions."""
    with (
        (estimate_db.parent / "serve.log").open("wb") as log,
        http_server(["--db", str(estimate_db)], server_env(), stderr=log) as url,
    ):
        yield url


@asynccontextmanager
async def _streams(db: Path, url: str | None) -> AsyncIterator[Any]:
    """The read and write streams of a new `ragbudget serve` over stdio (`url` None), or of a
    new session with the HTTP server at `url`."""
    if url is not None:
        async with streamable_http_client(url) as streams:
            yield streams
        return
    command = serve_command()
    params = StdioServerParameters(
        command=command[0], args=[*command[1:], "--db", str(db)], env=server_env()
    )
    async with stdio_client(params, errlog=sys.stderr) as streams:
        yield streams


async def _session_calls(
    db: Path, name: str, topics: str, log_level: Any = None, url: str | None = None
) -> list[Any]:
    logs: list[Any] = []

    async def on_log(params: Any) -> None:
        logs.append(params)

    results = []
    async with (
        _streams(db, url) as (read, write),
        ClientSession(
            read,
            write,
            client_info=Implementation(name=name, version="1"),
            logging_callback=on_log,
            log_level=log_level,
        ) as session,
    ):
        await session.initialize()
        if log_level is not None and session.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            with pytest.warns(MCPDeprecationWarning):  # the client's API is deprecated
                await session.set_logging_level(log_level)  # a handshake version's way to ask
        for tool, args in ASKS:
            if tool == "read_document":
                args = {**args, "source": topics}
            result = await session.call_tool(tool, args)
            results.append(result)
            page = page_of(result) if not result.is_error else {}
            if page.get("next_cursor"):  # the continuation the notice names
                results.append(
                    await session.call_tool(tool, {**args, "cursor": page["next_cursor"]})
                )
            elif tool == "read_document" and page.get("next_offset") is not None:
                following = {**args, "offset": page["next_offset"]}
                results.append(await session.call_tool(tool, following))
        stats = await session.call_tool("stats", {})
    return [results, stats, logs]


@pytest.mark.parametrize(
    ("profile", "transport"),
    [*((p, "http") for p in PROFILES), (DEFAULT_PROFILE, "stdio")],
    ids=lambda p: p if isinstance(p, str) else p.name,
)
async def test_every_answer_is_within_the_walls_of_the_client_that_asked(
    profile: ClientProfile, transport: str, estimate_db: Path, stdlib: Path,
    request: pytest.FixtureRequest,
) -> None:  # fmt: skip
    topics = str(stdlib / "pydoc_data" / "topics.py")
    url = request.getfixturevalue("walls_url") if transport == "http" else None
    results, stats, logs = await _session_calls(
        estimate_db, profile.sends or "some-other-agent", topics, url=url
    )
    assert listing_of(stats)["client_profile"] == profile.name
    for result in results:
        assert not result.is_error, result.content
        whole = whole_answer(result)
        assert_within_walls(profile, whole)
        for rule in RULES:  # whichever field the client gives its model
            view = model_view(result, rule)
            assert_within_walls(profile, view)
            assert_model_reads_the_answer(result, view)
        budget = page_of(result)["budget"]
        assert budget["profile"] == profile.name
        if budget["clamped"] or budget.get("bound") in ("chars", "bytes"):
            # the server's line says the wall in words and names the profile
            assert f"client profile {profile.name}:" in result.content[0].text
        assert result.structured_content is None  # one text block, whatever a client forwards
    assert logs == [], "no log message unless the request asked for a level"


async def test_a_client_that_asks_for_a_log_level_gets_the_warning(
    estimate_db: Path, stdlib: Path
) -> None:
    topics = str(stdlib / "pydoc_data" / "topics.py")
    _, _, logs = await _session_calls(estimate_db, "codex-mcp-client", topics, "warning")
    assert any("stopped at the" in str(entry.data) for entry in logs), logs
