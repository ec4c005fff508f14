"""TokenBudgetMiddleware on a third party's server, through fastmcp's in-memory client."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from typing import Any

import pytest
from fastmcp import Client
from fastmcp.exceptions import ToolError
from mcp_types import ImageContent
from middleware_helpers import next_call, pages_after, texts, visible, whole_json, whole_text
from ragbudget import TokenCounter
from ragbudget.limits import Walls
from ragbudget.middleware import TokenBudgetMiddleware
from third_party_server import ITEMS, LOG, NESTED, ONE_LONG_LINE, UNICODE, build_server

BUDGET = 4000


def guarded(**options: Any) -> Any:
    server = build_server()
    options.setdefault("counter", "tiktoken:cl100k_base")
    server.add_middleware(TokenBudgetMiddleware(options.pop("max_tokens", BUDGET), **options))
    return server


@pytest.fixture
async def client() -> AsyncIterator[Client[Any]]:
    async with Client(guarded()) as connected:
        yield connected


async def test_the_log_is_about_200k_tokens(exact_counter: TokenCounter) -> None:
    assert 180_000 <= exact_counter.count(LOG) <= 260_000


async def test_small_results_pass_byte_for_byte() -> None:
    async with Client(build_server()) as plain, Client(guarded()) as guarded_client:
        for name, args in [
            ("status", {}),
            ("screenshot", {"small": True}),
            ("report", {"rows": 5}),
        ]:
            want = await plain.call_tool_mcp(name, args)
            got = await guarded_client.call_tool_mcp(name, args)
            assert got.model_dump_json() == want.model_dump_json()


async def test_a_200k_token_log_is_cut_after_a_line_and_pages_back(
    client: Client[Any], exact_counter: TokenCounter
) -> None:
    result = await client.call_tool("read_log")
    assert visible(result, exact_counter) <= BUDGET
    body, notice = texts(result)
    assert LOG.startswith(body) and body.endswith("\n")
    assert "cut to fit 4,000 tokens" in notice and "showing lines 1-" in notice
    assert result.structured_content is None  # a cut result is text only: every client reads it
    assert await whole_text(client, result, exact_counter, BUDGET) == LOG


async def test_pages_of_a_text_end_on_line_boundaries(
    client: Client[Any], exact_counter: TokenCounter
) -> None:
    result = await client.call_tool("greetings")
    assert visible(result, exact_counter) <= BUDGET
    bodies, calls = await pages_after(client, result, exact_counter, BUDGET)
    assert calls > 3
    assert all(body.endswith("\n") for body in [texts(result)[0], *bodies])
    assert "".join([texts(result)[0], *bodies]) == UNICODE


@pytest.mark.slow
async def test_a_lone_line_over_the_budget_is_cut_at_a_word(
    client: Client[Any], exact_counter: TokenCounter
) -> None:
    result = await client.call_tool("one_line")
    body = texts(result)[0]
    assert visible(result, exact_counter) <= BUDGET
    assert body.endswith(".") and ONE_LONG_LINE.startswith(body)
    assert await whole_text(client, result, exact_counter, BUDGET) == ONE_LONG_LINE


async def test_a_5000_item_list_stays_valid_json(
    client: Client[Any], exact_counter: TokenCounter
) -> None:
    result = await client.call_tool("list_items")
    assert visible(result, exact_counter) <= BUDGET
    shown = json.loads(texts(result)[0])
    assert 0 < len(shown) < 5000 and shown == ITEMS[: len(shown)]
    assert f"kept {len(shown):,} of 5,000 items" in texts(result)[-1]
    assert result.structured_content is None  # a cut result is text only: every client reads it
    assert await whole_json(client, result, exact_counter, BUDGET) == ITEMS


async def test_nested_dicts_keep_their_shape_and_page_back(
    client: Client[Any], exact_counter: TokenCounter
) -> None:
    result = await client.call_tool("account_tree")
    assert visible(result, exact_counter) <= BUDGET
    shown = json.loads(texts(result)[0])
    assert list(shown) == list(NESTED) and shown["summary"] == NESTED["summary"]
    assert result.structured_content is None
    assert await whole_json(client, result, exact_counter, BUDGET) == NESTED


async def test_a_cut_model_result_is_valid_json_text_and_no_schema_is_listed(
    client: Client[Any], exact_counter: TokenCounter
) -> None:
    tools = {tool.name: tool for tool in await client.list_tools()}
    # a cut result carries no structured content, so no budgeted tool promises it
    assert tools["report"].output_schema is None and tools["strict_rows"].output_schema is None
    result = await client.call_tool("report", {"rows": 4000})
    assert visible(result, exact_counter) <= BUDGET
    assert result.structured_content is None
    shown = json.loads(texts(result)[0])
    assert shown["title"] == "usage" and 0 < len(shown["rows"]) < 4000
    assert "more(handle=" in texts(result)[-1]


async def test_an_image_over_the_budget_is_replaced_by_a_note(client: Client[Any]) -> None:
    big = await client.call_tool("screenshot")
    assert not any(isinstance(block, ImageContent) for block in big.content)
    assert "left out, over the 4,000-token budget: image (image/png" in texts(big)[0]
    small = await client.call_tool("screenshot", {"small": True})
    assert isinstance(small.content[0], ImageContent)


async def test_more_lists_and_refuses_bad_handles_and_offsets(client: Client[Any]) -> None:
    tools = {tool.name: tool for tool in await client.list_tools()}
    assert tools["more"].annotations is not None and tools["more"].annotations.read_only_hint
    with pytest.raises(ToolError, match="unknown or expired"):
        await client.call_tool("more", {"handle": "nope", "offset": 0})
    result = await client.call_tool("list_items")
    call = next_call(texts(result)[-1])
    assert call is not None
    with pytest.raises(ToolError, match="past the end"):
        await client.call_tool("more", {"handle": call[0], "offset": 10**9})


async def test_per_tool_budgets_and_exclusions(exact_counter: TokenCounter) -> None:
    server = guarded(tool_budgets={"list_items": 500}, exclude_tools=["read_log"])
    async with Client(server) as client:
        items = await client.call_tool("list_items")
        assert visible(items, exact_counter) <= 500
        assert await whole_json(client, items, exact_counter, 500) == ITEMS
        log = await client.call_tool("read_log")
        assert texts(log) == [LOG]
        nested = await client.call_tool("account_tree")
        assert 500 < visible(nested, exact_counter) <= BUDGET


async def test_each_cut_is_logged_and_sent_as_an_mcp_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    received: list[str] = []

    async def on_log(message: Any) -> None:
        received.append(str(message.data))

    async with Client(guarded(), log_handler=on_log) as client:
        with caplog.at_level(logging.DEBUG, logger="ragbudget.middleware.token_budget"):
            await client.call_tool("list_items")
            await client.call_tool("status")
    mine = [r for r in caplog.records if r.name == "ragbudget.middleware.token_budget"]
    cuts = [r for r in mine if "result cut to fit" in r.getMessage()]
    assert len(cuts) == 1 and cuts[0].levelname == "DEBUG"
    assert len(received) == 1 and "list_items: result cut to fit 4,000 tokens" in received[0]


async def test_without_continuation_there_is_no_more_tool(exact_counter: TokenCounter) -> None:
    async with Client(guarded(continuation=False)) as client:
        assert "more" not in {tool.name for tool in await client.list_tools()}
        result = await client.call_tool("read_log")
        assert visible(result, exact_counter) <= BUDGET
        assert next_call(texts(result)[-1]) is None
        assert "Ask for less" in texts(result)[-1]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"max_tokens": 10}, "max_tokens must be >= 128"),
        ({"max_tokens": 1.5}, "max_tokens must be an int"),
        ({"tool_budgets": {"x": 5}}, r"tool_budgets\['x'\] must be >= 128"),
        ({"exclude_tools": "read_log"}, "exclude_tools must be a collection"),
        ({"exclude_tools": 5}, "exclude_tools must be a collection of tool names, got 5"),
        ({"exclude_tools": ["ok", ""]}, "exclude_tools must hold tool names"),
        ({"cache_entries": -1}, "cache_entries must be an int >= 0"),
        ({"cache_ttl": 0}, "cache_ttl must be > 0"),
        ({"cache_ttl": float("inf")}, "cache_ttl must be > 0 and finite"),
        ({"cache_bytes": -5}, "cache_bytes must be an int >= 0"),
        ({"more_tool": ""}, "more_tool must be a non-empty tool name"),
        ({"client": "vim"}, "client must be one of claude-code, .*, got 'vim'"),
        ({"walls": 5000}, "walls must be a ragbudget.limits.Walls, got int"),
        ({"walls": Walls(100)}, "walls.tokens must be >= 128"),
        ({"walls": Walls(5000, chars=100)}, "walls.chars must be None or >= 1,024"),
        ({"walls": Walls(5000), "max_tokens": 4000}, "give max_tokens or walls, not both"),
        ({"walls": Walls(5000), "client": "codex"}, "give client .* or walls, not both"),
        ({"tool_budgets": {"x": Walls(5000, bytes=10)}}, r"tool_budgets\['x'\].bytes must be"),
    ],
)
def test_bad_settings_name_the_argument(options: dict[str, Any], message: str) -> None:
    with pytest.raises((ValueError, TypeError), match=message):
        TokenBudgetMiddleware(**options)


def test_exclude_tools_none_excludes_none() -> None:
    assert TokenBudgetMiddleware(exclude_tools=None).exclude_tools == frozenset()
