"""The page cache's bounds (entries, characters, time), and the JSON trimming's promises."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from fastmcp import Client
from fastmcp.exceptions import ToolError
from middleware_helpers import next_call, texts
from ragbudget import TokenCounter
from ragbudget.middleware import TokenBudgetMiddleware
from ragbudget.pages.cache import PageCache
from ragbudget.pages.json_trim import Cut, dumps, trim
from ragbudget.pages.remainder import find_more_call, join_pages, more_call
from third_party_server import NESTED, build_server


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_lru_evicts_the_least_recently_used() -> None:
    cache: PageCache[str] = PageCache(max_entries=2, max_chars=1000, ttl_seconds=60)
    cache.put("a", "A", 1)
    cache.put("b", "B", 1)
    assert cache.get("a") == "A"  # now "b" is the least recently used
    cache.put("c", "C", 1)
    assert cache.get("b") is None and cache.get("a") == "A" and cache.get("c") == "C"
    assert len(cache) == 2


def test_characters_are_bounded_and_an_oversized_value_is_not_kept() -> None:
    cache: PageCache[str] = PageCache(max_entries=100, max_chars=100, ttl_seconds=60)
    for name in "abcde":
        assert cache.put(name, name, 30)
    assert cache.chars <= 100 and len(cache) == 3
    assert cache.get("a") is None and cache.get("e") == "e"
    assert not cache.put("huge", "x", 101)
    assert cache.get("e") == "e" and cache.chars == 90  # nothing was evicted for it


def test_entries_expire_after_the_ttl_since_their_last_read() -> None:
    clock = Clock()
    cache: PageCache[str] = PageCache(max_entries=10, max_chars=100, ttl_seconds=10, clock=clock)
    cache.put("a", "A", 5)
    cache.put("b", "B", 5)
    clock.now = 8
    assert cache.get("a") == "A"  # read: kept until 18
    clock.now = 12
    assert cache.get("b") is None and cache.get("a") == "A"
    clock.now = 30
    assert len(cache) == 0 and cache.chars == 0


def test_memory_stays_bounded_under_many_cut_results() -> None:
    cache: PageCache[str] = PageCache(max_entries=50, max_chars=10_000, ttl_seconds=60)
    for i in range(5000):
        cache.put(f"h{i}", "x", 100 + i % 300)
        assert len(cache._entries) <= 50 and cache.chars <= 10_000


async def test_the_middleware_forgets_old_and_stale_handles(exact_counter: TokenCounter) -> None:
    clock = Clock()
    server = build_server()
    middleware = TokenBudgetMiddleware(
        1000, counter=exact_counter, cache_entries=2, cache_ttl=60, clock=clock
    )
    server.add_middleware(middleware)
    async with Client(server) as client:
        calls = []
        for tool in ("read_log", "list_items", "account_tree"):
            call = next_call(texts(await client.call_tool(tool))[-1])
            assert call is not None
            calls.append(call)
        with pytest.raises(ToolError, match="unknown or expired"):
            await client.call_tool("more", {"handle": calls[0][0], "offset": 0})
        page = await client.call_tool("more", {"handle": calls[2][0], "offset": 0})
        assert "account_tree result" in texts(page)[-1]
        clock.now = 61
        with pytest.raises(ToolError, match="unknown or expired"):
            await client.call_tool("more", {"handle": calls[2][0], "offset": 0})
    assert len(middleware.cache) == 0


async def test_a_result_larger_than_the_cache_is_cut_without_a_handle(
    exact_counter: TokenCounter,
) -> None:
    server = build_server()
    server.add_middleware(TokenBudgetMiddleware(1000, counter=exact_counter, cache_chars=10_000))
    async with Client(server) as client:
        notice = texts(await client.call_tool("read_log"))[-1]
    assert next_call(notice) is None and "not kept (larger than the page cache)" in notice


def _fits(counter: TokenCounter, budget: int) -> Any:
    return lambda value: counter.count(dumps(value)) <= budget


def test_trim_never_modifies_the_value_and_returns_a_fitting_one_as_is(
    exact_counter: TokenCounter,
) -> None:
    before = copy.deepcopy(NESTED)
    shown, cuts, fitted = trim(NESTED, _fits(exact_counter, 300))
    assert fitted and cuts and before == NESTED
    assert exact_counter.count(dumps(shown)) <= 300
    small = {"a": [1, 2]}
    assert trim(small, _fits(exact_counter, 300)) == (small, [], True)


def test_small_values_stay_whole_and_the_largest_takes_what_is_left(
    exact_counter: TokenCounter,
) -> None:
    value = {"title": "usage", "rows": list(range(3000)), "tags": ["a", "b"]}
    shown, cuts, _ = trim(value, _fits(exact_counter, 200))
    assert shown["title"] == "usage" and shown["tags"] == ["a", "b"]
    assert cuts == [Cut(("rows",), "items", len(shown["rows"]), 3000)]
    assert cuts[0].describe() == f"$.rows: kept {len(shown['rows']):,} of 3,000 items"


def test_an_object_of_scalars_loses_trailing_keys_last(exact_counter: TokenCounter) -> None:
    value = {f"key{i}": i for i in range(2000)}
    shown, cuts, fitted = trim(value, _fits(exact_counter, 150))
    assert fitted and list(shown) == list(value)[: len(shown)]
    assert cuts == [Cut((), "keys", len(shown), 2000)]


def test_join_pages_refuses_a_page_out_of_place() -> None:
    with pytest.raises(ValueError, match="starts at 5, but 2 units are there"):
        join_pages({"a": [1, 2]}, [{"path": ["a"], "start": 5, "items": [3]}])
    with pytest.raises(ValueError, match="not a continuation page"):
        join_pages({"a": [1, 2]}, [[3]])


def test_a_continuation_call_is_written_and_read_back_the_same_way() -> None:
    """The notices write the call with `more_call`; clients (and these tests) read it back
    with `find_more_call`, under the middleware's tool name, whatever it is."""
    notice = f"[ragbudget: cut to fit 100 tokens. Call {more_call('more', 'AbC-9_x', 0)} ...]"
    assert find_more_call(notice) == ("AbC-9_x", 0)
    page = f"[ragbudget: search result, ... Next page: {more_call('next_page', 'h1', 4096)}.]"
    assert find_more_call(page, "next_page") == ("h1", 4096)
    assert find_more_call(page) is None  # another tool's call is not `more`'s
    assert find_more_call("[ragbudget: ... This is the last page.]") is None


def _large_json_result(n: int) -> Any:
    from fastmcp.tools import ToolResult
    from mcp_types import TextContent

    value = [
        {"id": i, "name": f"item {i}", "tags": ["red", "grün"], "score": i / 7} for i in range(n)
    ]
    return ToolResult(content=[TextContent(type="text", text=dumps(value))]), value


def test_held_bytes_measures_what_tracemalloc_sees() -> None:
    import json
    import tracemalloc

    from ragbudget.pages.cache import held_bytes

    text = _large_json_result(5_000)[0].content[0].text
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        value = json.loads(text)
        traced = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    measured = held_bytes(value)
    assert traced <= measured <= traced * 1.5  # never under what is really held
    assert measured > 5 * len(text)  # why characters were no bound: several bytes each


@pytest.mark.slow  # four 2.6 MB results under tracemalloc: ~4 s of CPU
def test_the_cache_holds_no_more_memory_than_cache_bytes(exact_counter: TokenCounter) -> None:
    """Cut results of a large JSON (about 2.6 MB parsed each, 0.39 MB of text) under a 6.25 MB
    bound, measured by tracemalloc: the cache keeps what fits (two) and never more. (Four
    times these sizes hold in the same proportions: 0.83 of the bound held, at four times the
    CPU time, most of it tracemalloc's.)"""
    import gc
    import tracemalloc

    bound = 6_250_000
    middleware = TokenBudgetMiddleware(
        1000, counter=exact_counter, cache_bytes=bound, cache_chars=10**9
    )
    tracemalloc.start()
    try:
        gc.collect()
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(4):
            result = _large_json_result(5_000)[0]
            middleware.guard.cut(result, 1000, "big")
            del result
            gc.collect()
            held = tracemalloc.get_traced_memory()[0] - before
            assert middleware.cache.nbytes <= bound
            assert held <= bound * 1.05, f"{held:,} bytes held"
    finally:
        tracemalloc.stop()
    assert len(middleware.cache) == 2  # each result evicted the oldest
    small = TokenBudgetMiddleware(1000, counter=exact_counter, cache_bytes=1_000_000)
    notice = texts(small.guard.cut(_large_json_result(5_000)[0], 1000, "big").result)[-1]
    assert "not kept (larger than the page cache)" in notice and next_call(notice) is None
