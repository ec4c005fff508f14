"""Streamable HTTP on loopback: bearer auth, the default bind address, concurrent searches."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport
from mcp_helpers import COUNTER_SPEC, HEADERS, INITIALIZE, http_server, page_of, visible_tokens
from processes import server_env
from ragbudget import TokenCounter
from ragbudget_server.mcp.answers import SearchAnswer
from ragbudget_server.store import DocumentStore

pytestmark = pytest.mark.process

TOKEN = "test-token-0123456789"


@pytest.fixture(scope="module")
def http_url(shared_store: DocumentStore, store_dir: Path) -> Iterator[str]:
    """`ragbudget serve --transport http` with the token from the environment, no --host."""
    env = server_env()
    env["RAGBUDGET_AUTH_TOKEN"] = TOKEN
    with http_server(["--db", str(store_dir), "--counter", COUNTER_SPEC], env) as url:
        yield url


@pytest.mark.parametrize("authorization", [None, "Bearer wrong-token", f"Basic {TOKEN}"])
def test_requests_without_the_bearer_token_are_refused(
    http_url: str, authorization: str | None
) -> None:
    headers = dict(HEADERS)
    if authorization is not None:
        headers["Authorization"] = authorization
    response = httpx.post(http_url, json=INITIALIZE, headers=headers, timeout=60)
    assert response.status_code == 401
    assert "jsonrpc" not in response.text or "result" not in response.json()


def test_the_right_token_is_let_in(http_url: str) -> None:
    headers = {**HEADERS, "Authorization": f"Bearer {TOKEN}"}
    response = httpx.post(http_url, json=INITIALIZE, headers=headers, timeout=60)
    assert response.status_code == 200


def test_binds_to_loopback_by_default(http_url: str) -> None:
    port = int(http_url.rsplit(":", 1)[1].split("/")[0])
    table = Path("/proc/net/tcp")
    if not table.exists():  # pragma: no cover - not Linux
        pytest.skip("needs /proc/net/tcp")
    listening = [
        line.split()[1]
        for line in table.read_text().splitlines()[1:]
        if line.split()[3] == "0A" and int(line.split()[1].split(":")[1], 16) == port
    ]
    assert listening == [f"0100007F:{port:04X}"], listening


async def test_concurrent_searches_all_within_budget(
    http_url: str, exact_counter: TokenCounter
) -> None:
    queries = ["json decoder", "operator precedence", "shell quoting", "wrap text", "import"]
    calls = [
        (queries[i % len(queries)], 600 + 97 * i, 1 + i % 40) for i in range(60)
    ]  # budgets 600..6,323, limits 1..40
    async with Client(StreamableHttpTransport(http_url, auth=TOKEN)) as client:
        results = await asyncio.gather(
            *(
                client.call_tool_mcp(
                    "search", {"query": query, "max_tokens": budget, "limit": limit}
                )
                for query, budget, limit in calls
            )
        )
    assert len(results) == len(calls)
    for (_query, budget, _limit), result in zip(calls, results, strict=True):
        assert not result.is_error, result
        assert visible_tokens(result, exact_counter) <= budget
        SearchAnswer.model_validate(page_of(result))
