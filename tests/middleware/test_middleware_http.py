"""TokenBudgetMiddleware on a third party's server over streamable HTTP on 127.0.0.1."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import mcp_types as mt
import pytest
from fastmcp import Client
from middleware_helpers import texts, visible, whole_json, whole_text
from processes import http_process, server_env
from ragbudget import TokenCounter
from ragbudget.limits import Walls
from third_party_server import ITEMS, LOG, UNICODE
from walls_check import over, read_all

pytestmark = pytest.mark.process

BUDGET = 6000
SCRIPT = Path(__file__).with_name("third_party_server.py")


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    command = [sys.executable, str(SCRIPT)]
    with http_process(lambda port: [*command, str(port), str(BUDGET)], server_env()) as url:
        yield url


async def test_log_list_and_unicode_within_budget_and_paged_back(
    url: str, exact_counter: TokenCounter
) -> None:
    async with Client(url) as client:
        log = await client.call_tool("read_log")
        assert visible(log, exact_counter) <= BUDGET
        assert await whole_text(client, log, exact_counter, BUDGET) == LOG
        items = await client.call_tool("list_items")
        assert visible(items, exact_counter) <= BUDGET
        assert json.loads(texts(items)[0]) and items.structured_content is None
        assert await whole_json(client, items, exact_counter, BUDGET) == ITEMS
        greetings = await client.call_tool("greetings")
        assert await whole_text(client, greetings, exact_counter, BUDGET) == UNICODE


async def test_small_results_are_untouched_over_http(url: str) -> None:
    async with Client(url) as client:
        result = await client.call_tool("status")
    assert result.data == {"ok": True, "version": "1.2.3", "note": "naïve café ☕"}
    assert result.meta is None or "ragbudget_cut" not in result.meta


@pytest.mark.parametrize(
    ("name", "walls"),
    [("github-copilot-cli", Walls(BUDGET, bytes=10_000)), ("codex", Walls(BUDGET))],
)
async def test_each_client_name_gets_its_walls_over_http(url: str, name: str, walls: Walls) -> None:
    """Over streamable HTTP (2026-07-28: the name travels in each request's `_meta`), the
    server's `max_tokens` is the token wall and the client's byte wall still applies."""
    info = mt.Implementation(name=name, version="1.0")
    async with Client(url, client_info=info) as client:
        greetings = await client.call_tool("greetings")
        assert over(greetings, walls) == []
        assert "".join([greetings.content[0].text, *await read_all(client, greetings, walls)]) == (
            UNICODE
        )
