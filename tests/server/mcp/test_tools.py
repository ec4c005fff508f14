"""The tools through fastmcp's in-memory client, over the shared ingested store."""

from __future__ import annotations

import json
import sysconfig
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client
from fastmcp.exceptions import ToolError
from mcp_helpers import COUNTER_SPEC, listing_of, page_of, text_blocks, visible_tokens, whole_answer
from ragbudget import TokenCounter
from ragbudget_server.mcp import ServerSettings, create_server
from ragbudget_server.mcp.answers import ReadAnswer, SearchAnswer
from ragbudget_server.store import DocumentStore


async def test_tools_are_listed_with_hints_and_bounds_and_no_output_schema(server: Any) -> None:
    async with Client(server) as client:
        tools = {tool.name: tool for tool in await client.list_tools()}
    assert set(tools) == {"search", "read_document", "stats"}, "ingest is off without roots"
    search = tools["search"]
    hints = search.annotations
    assert hints is not None
    assert (hints.read_only_hint, hints.idempotent_hint, hints.open_world_hint) == (
        True,
        True,
        False,
    )
    props = search.input_schema["properties"]
    assert search.input_schema["required"] == ["query"]
    assert props["max_tokens"]["minimum"] == 1
    assert props["max_tokens"]["default"] == 8192
    assert props["limit"]["minimum"] == 1
    assert props["limit"]["maximum"] >= 50
    assert "offset" not in props and "cursor" in props  # one way to continue: the cursor
    assert all(props[name].get("description") for name in props), props
    assert "ctx" not in props
    # No output schema: answers are one text block (clients that forward structured content
    # would otherwise hide the passages from their model)
    assert all(tool.output_schema is None for tool in tools.values())
    read = tools["read_document"]
    assert read.annotations is not None
    assert read.annotations.read_only_hint is True
    assert read.input_schema["properties"]["offset"]["minimum"] == 1


async def test_search_sends_one_text_block_that_is_the_response(
    server: Any, exact_counter: TokenCounter
) -> None:
    async with Client(server) as client:
        result = await client.call_tool_mcp(
            "search", {"query": "JSON decoder scanstring", "max_tokens": 3000, "limit": 3}
        )
    assert not result.is_error
    blocks = text_blocks(result)
    assert len(blocks) == 1, "one text block, whatever field a client forwards"
    assert result.structured_content is None and "JSON decoder" not in json.dumps(result.meta)
    response = SearchAnswer.model_validate(page_of(result))
    assert all(f":{r.start_line}-{r.end_line}" in blocks[0] for r in response.results)
    assert exact_counter.count(whole_answer(result)) <= 3000
    assert response.results, "the json package should match"
    assert any(r.source.endswith(("decoder.py", "scanner.py")) for r in response.results)
    assert page_of(result)["budget"]["clamped"] is False


async def test_truncated_search_warns_and_continues_at_the_offset(
    server: Any, exact_counter: TokenCounter
) -> None:
    logs: list[Any] = []

    async def on_log(message: Any) -> None:
        logs.append(message)

    async with Client(server, log_handler=on_log) as client:
        first = await client.call_tool_mcp(
            "search",
            {"query": "operator precedence and comparisons", "limit": 30, "max_tokens": 900},
        )
        page = SearchAnswer.model_validate(page_of(first))
        assert page.truncated
        assert page.next_offset is not None
        (text,) = text_blocks(first)
        assert exact_counter.count(whole_answer(first)) <= 900
        assert f'cursor="{page.next_cursor}"' in text, "the model must see how to continue"
        assert "(900-token budget)" in text and page.budget.bound is not None
        # fastmcp's client asks for log messages (a level in _meta): it gets the warning
        assert any(m.level == "warning" and "stopped at the" in str(m.data) for m in logs), logs

        second = await client.call_tool_mcp(
            "search",
            {
                "query": "operator precedence and comparisons",
                "limit": 30,
                "max_tokens": 900,
                "cursor": page.next_cursor,
            },
        )
    following = SearchAnswer.model_validate(page_of(second))
    assert following.results
    assert not {r.id for r in page.results} & {r.id for r in following.results}


async def test_ceiling_clamps_and_says_so_within_the_ceiling(
    shared_store: DocumentStore, store_dir: Path, exact_counter: TokenCounter, small_source: str
) -> None:
    settings = ServerSettings(db=store_dir, counter=COUNTER_SPEC, max_tokens_ceiling=1500)
    server = create_server(settings, store=shared_store)
    async with Client(server) as client:
        result = await client.call_tool_mcp(
            "search", {"query": "binary operators", "limit": 50, "max_tokens": 100_000}
        )
        read = await client.call_tool_mcp(
            "read_document", {"source": small_source, "max_tokens": 50_000}
        )
    for res in (result, read):
        (block,) = text_blocks(res)
        assert block.startswith("[max_tokens=") and "clamped to 1,500 tokens" in block
        assert visible_tokens(res, exact_counter) <= 1500
        assert exact_counter.count(whole_answer(res)) <= 1500
        assert page_of(res)["budget"]["clamped"] is True


async def test_read_document_pages_through_the_bomb(
    server: Any, bomb_source: str, exact_counter: TokenCounter
) -> None:
    source = bomb_source
    async with Client(server) as client:
        first = await client.call_tool_mcp("read_document", {"source": source, "max_tokens": 2000})
        page = ReadAnswer.model_validate(page_of(first))
        assert page.truncated
        assert page.next_offset is not None
        (text,) = text_blocks(first)
        assert page.budget.bound == "tokens" and "(2,000-token budget)" in text
        assert exact_counter.count(whole_answer(first)) <= 2000
        assert f"offset={page.next_offset}" in text
        second = await client.call_tool_mcp(
            "read_document", {"source": source, "offset": page.next_offset, "max_tokens": 2000}
        )
    following = ReadAnswer.model_validate(page_of(second))
    assert following.start_line == page.next_offset
    assert following.total_lines == page.total_lines > 1000


@pytest.mark.parametrize(
    ("tool", "arguments", "expected"),
    [
        ("search", {"query": "json", "max_tokens": -5}, "max_tokens"),
        ("search", {"query": "json", "max_tokens": 0}, "max_tokens"),
        ("search", {"query": ""}, "query"),
        ("search", {"query": "   "}, "query"),
        ("search", {"query": "json", "limit": 0}, "limit"),
        ("search", {"query": "json", "offset": 3}, "offset"),  # pages go by cursor
        ("read_document", {"source": "/no/such/file.py"}, "/no/such/file.py"),
        ("read_document", {"source": ""}, "source"),
        ("read_document", {"source": "x", "offset": 0}, "offset"),
    ],
)
async def test_bad_arguments_are_tool_errors_and_the_server_keeps_serving(
    server: Any, tool: str, arguments: dict[str, Any], expected: str
) -> None:
    async with Client(server) as client:
        with pytest.raises(ToolError, match=expected):
            await client.call_tool(tool, arguments)
        after = await client.call_tool_mcp("search", {"query": "json", "max_tokens": 500})
    assert not after.is_error


async def test_a_budget_too_small_for_any_response_is_a_tool_error(
    server: Any, small_source: str
) -> None:
    """Decided: below the empty response's size the answer is a ToolError naming the minimum."""
    async with Client(server) as client:
        with pytest.raises(ToolError, match="max_tokens"):
            await client.call_tool("search", {"query": "json", "max_tokens": 1})
        with pytest.raises(ToolError, match="max_tokens"):
            await client.call_tool("read_document", {"source": small_source, "max_tokens": 1})


async def test_stats_reports_store_and_limits(server: Any) -> None:
    async with Client(server) as client:
        result = await client.call_tool("stats", {})
    data = listing_of(result)
    assert data is not None
    assert data["store"]["chunks"] > 100
    assert data["counter"] == COUNTER_SPEC
    assert data["counter_exact"] is True
    assert data["max_tokens_ceiling"] == 14_500  # exact counter: 25,000 over ~1.7
    assert data["ingest_roots"] == []


async def test_search_merges_by_default_and_takes_plain_and_a_cap(
    server: Any, exact_counter: TokenCounter
) -> None:
    """Evidence selection is the tool's default; `evidence=false` is the plain ranked prefix,
    `max_per_source` caps the results per file, and a bad cap is a tool error naming it."""
    query, budget = "decode a JSON document into objects", 2000  # room for the refs too
    async with Client(server) as client:
        calls = {
            name: await client.call_tool_mcp("search", {"query": query, "max_tokens": budget,
                                                        "limit": 30, **extra})
            for name, extra in (("default", {}), ("plain", {"evidence": False}),
                                ("capped", {"max_per_source": 1}))
        }  # fmt: skip
        with pytest.raises(ToolError, match="max_per_source"):
            await client.call_tool("search", {"query": query, "max_per_source": 0})
    pages = {name: SearchAnswer.model_validate(page_of(c)) for name, c in calls.items()}
    for name, call in calls.items():
        assert not call.is_error and visible_tokens(call, exact_counter) <= budget, name
    default, plain, capped = pages["default"], pages["plain"], pages["capped"]
    assert {r.source for r in plain.results} <= {r.source for r in default.results}
    assert len({r.source for r in default.results}) > len({r.source for r in plain.results})
    assert [r.id for r in plain.results] == plain.accounted_ids()  # one chunk a result
    sources = [r.source for r in capped.results]
    assert len(sources) == len(set(sources))
    assert capped.capped_ids and set(capped.capped_ids) <= set(capped.accounted_ids())


@pytest.mark.parametrize(
    "directory", ["json", f"{Path(sysconfig.get_paths()['stdlib']).name}/json/", "json/../json"]
)
async def test_a_relative_directory_matches_the_stored_folder_it_ends(
    server: Any, directory: str
) -> None:
    async with Client(server) as client:
        result = await client.call_tool_mcp(
            "search", {"query": "decode a string", "directory": directory, "limit": 5}
        )
    results = page_of(result)["results"]
    if directory.startswith("json/.."):  # not the end of a stored folder: from the working one
        assert results == []
        return
    assert results and all("/json/" in r["source"] for r in results)
