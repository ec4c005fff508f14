"""Search cursors through real transports: `ragbudget serve` over stdio (the official `mcp` SDK
`ClientSession`) and over streamable HTTP, and across a server restart.

A store of ~380 small chunks (random words, 16-token chunks, the offline hashing embedding) is
built once per module; that is enough for these transport tests: the store's own suite
(`tests/server/store/test_store_cursor.py`) walks 5,000 chunks on a coarse index, and
`benchmarks/bench_cursor_walks.py` 20 queries through `ragbudget serve` on 5,300. Each query is
walked by `cursor` with a small budget, several pages each, and every chunk matching the query
(the whole store, or the `file_type` filter's part of it) is accounted for exactly once across
the pages (`SearchAnswer.accounted_ids()`), none repeated, and the walk ends. A restart: walk
half over stdio, stop that server process, start a new one on the same store (over HTTP),
continue with the cursor to the end. Most of the time goes to starting processes (~2 s of CPU
each), so one HTTP server serves the module's tests that need an HTTP process which was not
started for them: the HTTP walk, and the second of two processes sharing one walk.
"""

from __future__ import annotations

import random
import shutil
import subprocess
import sys
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp_helpers import http_server, page_of, serve_command
from processes import server_env
from ragbudget_server.mcp.answers import SearchAnswer
from ragbudget_server.store import DocumentStore

pytestmark = [pytest.mark.process, pytest.mark.slow]

WORDS = [f"w{i}" for i in range(300)]
BUDGET = 2000
"""Small: each walk takes tens of pages of at most `limit` (20) results."""

WALKS: list[dict[str, Any]] = [
    {"query": "w3 w10 w22", "limit": 20, "max_tokens": BUDGET, "evidence": False},
    {"query": "w150 w151", "limit": 20, "max_tokens": BUDGET, "evidence": True},
    {"query": "w7 w8 w9", "limit": 20, "max_tokens": BUDGET, "file_type": "md",
     "format": "json"},
]  # fmt: skip

Call = Callable[[dict[str, Any]], Awaitable[SearchAnswer]]


@pytest.fixture(scope="module")
def walk_db(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str | None, set[str]]]:
    """The store's folder, and the ids matching each `file_type` (None: every chunk)."""
    root = tmp_path_factory.mktemp("cursor-walks")
    rng = random.Random(7)
    for f in range(8):
        text = "\n".join(
            " ".join(rng.choice(WORDS) for _ in range(3)) for _ in range(80)
        )  # two lines a chunk (exact counter)
        (root / "src").mkdir(exist_ok=True)
        (root / "src" / (f"f{f}.txt" if f % 2 else f"f{f}.md")).write_text(text + "\n")
    store = DocumentStore(path=root / "db")
    report = store.ingest([root / "src"], chunk_tokens=16, overlap=0)
    assert 300 <= report.chunks_added <= 1500, report
    matching: dict[str | None, set[str]] = {
        None: set(store.collection.get(include=[])["ids"]),
        "md": set(store.collection.get(where={"file_type": "md"}, include=[])["ids"]),
    }
    store.close()
    assert matching["md"] and matching["md"] < matching[None]
    shutil.copytree(root / "db", root / "pristine")  # copied before any server opens the store
    return root / "db", matching


@pytest.fixture(scope="module")
def shared_http(walk_db: tuple[Path, dict[str | None, set[str]]]) -> Iterator[str]:
    """The /mcp URL of a `ragbudget serve --transport http` on the module's store (tests only
    read it, and each cursor lives in the store, not in a process)."""
    with (
        (walk_db[0].parent / "serve.log").open("wb") as log,
        http_server(["--db", str(walk_db[0])], server_env(), stderr=log) as url,
    ):
        yield url


@asynccontextmanager
async def _http_calls(url: str) -> AsyncIterator[Call]:
    """A `search` caller over a new client session with the HTTP server at `url`."""
    async with Client(url) as client:

        async def call_http(arguments: dict[str, Any]) -> SearchAnswer:
            result = await client.call_tool_mcp("search", arguments)
            assert not result.is_error, result.content
            return SearchAnswer.model_validate(page_of(result))

        yield call_http


@asynccontextmanager
async def _server(transport: str, db: Path) -> AsyncIterator[Call]:
    """A new `ragbudget serve` process on `db` over `transport`: yields a `search` caller."""
    args = ["--db", str(db)]
    if transport == "stdio":
        command = serve_command()
        params = StdioServerParameters(
            command=command[0], args=[*command[1:], *args], env=server_env()
        )
        async with (
            stdio_client(params, errlog=sys.stderr) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()

            async def call_stdio(arguments: dict[str, Any]) -> SearchAnswer:
                result = await session.call_tool("search", arguments)
                assert not result.is_error, result.content
                return SearchAnswer.model_validate(page_of(result))

            yield call_stdio
    else:
        with http_server(args, server_env()) as url:
            async with _http_calls(url) as call:
                yield call


async def _pages(
    call: Call, ask: dict[str, Any], seen: Counter[str], cursor: str | None, most: int
) -> tuple[str | None, int]:
    """Up to `most` pages of `ask` from `cursor`, counting accounted ids into `seen`: the
    cursor that continues (None at the end) and how many pages were read."""
    for n in range(1, most + 1):
        page = await call({**ask, "cursor": cursor} if cursor is not None else ask)
        seen.update(page.accounted_ids())
        assert page.store_changed is None
        if page.next_cursor is None:
            assert page.next_offset is None
            return None, n
        assert page.next_cursor != cursor
        cursor = page.next_cursor
    return cursor, most


def _expected(walk_db: tuple[Path, dict[str | None, set[str]]], ask: dict[str, Any]) -> set[str]:
    return walk_db[1][ask.get("file_type")]


def _assert_once(seen: Counter[str], expected: set[str], ask: dict[str, Any]) -> None:
    repeated = [i for i, k in seen.items() if k > 1]
    assert not repeated, (ask, len(repeated))
    assert set(seen) == expected, (ask, len(expected - set(seen)), len(set(seen) - expected))


@asynccontextmanager
async def _caller(
    transport: str, walk_db: tuple[Path, dict[str | None, set[str]]], request: pytest.FixtureRequest
) -> AsyncIterator[Call]:
    """A new stdio server process, or a session with the module's HTTP server."""
    if transport == "stdio":
        async with _server("stdio", walk_db[0]) as call:
            yield call
    else:
        async with _http_calls(request.getfixturevalue("shared_http")) as call:
            yield call


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_cursor_walks_account_for_every_matching_chunk_once(
    transport: str,
    walk_db: tuple[Path, dict[str | None, set[str]]],
    request: pytest.FixtureRequest,
) -> None:
    async with _caller(transport, walk_db, request) as call:
        for ask in WALKS:
            seen: Counter[str] = Counter()
            cursor, pages = await _pages(call, ask, seen, None, most=500)
            assert cursor is None, "the walk must end"
            assert pages >= 3, (ask, pages)  # a small budget: several pages
            _assert_once(seen, _expected(walk_db, ask), ask)


async def test_a_cursor_continues_across_a_server_restart(
    walk_db: tuple[Path, dict[str | None, set[str]]],
) -> None:
    """Half a walk over stdio, that process stopped, the rest from a new process over HTTP
    (one restart covers both transports: each process start costs seconds)."""
    ask = WALKS[0]
    seen: Counter[str] = Counter()
    async with _server("stdio", walk_db[0]) as call:
        first = await call(ask)
        pages_in_all = 1
        seen.update(first.accounted_ids())
        assert first.next_cursor is not None
        # about half the walk: ~380 chunks are ~19 pages of this query at this budget
        cursor, pages = await _pages(call, ask, seen, first.next_cursor, most=8)
        pages_in_all += pages
        assert cursor is not None, "the first server must stop mid-walk"
    assert 0 < len(seen) < len(_expected(walk_db, ask))
    async with _server("http", walk_db[0]) as call:  # a new process on the same store
        end, pages = await _pages(call, ask, seen, cursor, most=500)
        pages_in_all += pages
    assert end is None, "the walk must end"
    assert pages_in_all >= 3
    _assert_once(seen, _expected(walk_db, ask), ask)


async def test_another_process_ingests_between_pages(
    walk_db: tuple[Path, dict[str | None, set[str]]], tmp_path: Path
) -> None:
    """`ragbudget ingest` in a process of its own writes new files into the store while a
    server process walks a cursor: every later page says the store changed, and the walk
    accounts for exactly the chunks of its first page's snapshot, none repeated, none new."""
    db = tmp_path / "db"
    shutil.copytree(walk_db[0].with_name("pristine"), db)  # the module's server has walk_db open
    new = tmp_path / "new"
    new.mkdir()
    for f in range(3):
        (new / f"n{f}.txt").write_text("w3 w10 w22 fresh words\n" * 40)
    ask = WALKS[0]
    seen: Counter[str] = Counter()
    changed: list[bool | None] = []
    async with _server("stdio", db) as call:
        first = await call(ask)
        seen.update(first.accounted_ids())
        assert first.next_cursor is not None and first.store_changed is None
        ingest = subprocess.run(
            [serve_command()[0], "ingest", str(new), "--db", str(db)],
            capture_output=True, text=True, env=server_env(), timeout=120, check=False,
        )  # fmt: skip
        assert ingest.returncode == 0, ingest.stderr
        cursor: str | None = first.next_cursor
        for _ in range(500):
            page = await call({**ask, "cursor": cursor})
            seen.update(page.accounted_ids())
            changed.append(page.store_changed)
            cursor = page.next_cursor
            if cursor is None:
                break
    assert cursor is None, "the walk must end"
    assert changed and all(changed), changed  # every page after the ingest says so
    _assert_once(seen, _expected(walk_db, ask), ask)  # the snapshot's chunks, once each


async def test_two_server_processes_share_one_walk(
    walk_db: tuple[Path, dict[str | None, set[str]]], shared_http: str
) -> None:
    """Two `ragbudget serve` processes on one store at once: a walk whose pages alternate
    between them accounts for every matching chunk once (the cursor is the store's, not a
    process's)."""
    ask = WALKS[1]
    seen: Counter[str] = Counter()
    async with _server("stdio", walk_db[0]) as one, _http_calls(shared_http) as two:
        cursor: str | None = None
        pages = 0
        for n in range(500):
            call = one if n % 2 == 0 else two
            page = await call({**ask, "cursor": cursor} if cursor is not None else ask)
            seen.update(page.accounted_ids())
            pages += 1
            cursor = page.next_cursor
            if cursor is None:
                break
    assert cursor is None, "the walk must end"
    assert pages >= 3
    _assert_once(seen, _expected(walk_db, ask), ask)
