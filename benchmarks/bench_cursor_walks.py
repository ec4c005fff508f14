"""Search cursors through `ragbudget serve`: whole-store walks over stdio, over HTTP, and across
a server restart, on a store of several thousand chunks (issue 39).

The store: the standard library's `json` and `logging` packages in 16-token chunks (about 5,000
chunks of real code and docstrings, a line or two each, by the Python at hand; the default
index). Each of 20 queries is walked by `cursor` to its end, every other one through a
`ragbudget serve` process over stdio (the official `mcp` SDK's `ClientSession`), the rest
through one over streamable HTTP (fastmcp's `Client`), each transport in plain and evidence mode
at several limits and budgets (the default client profile's walls: 9,000 tokens, 40,000
characters); one more walk reads its first `RESTART_AFTER` pages over stdio, that process
stopped, and the rest through a new process over HTTP. A walk counts the chunks its pages
account for (`SearchAnswer.accounted_ids()`: shown, merged, duplicate or capped) against every
chunk of the store: missing and repeated must be 0. Prints a line a walk and the time; exits 1
if a walk missed, repeated or did not end.

    uv run --all-packages python benchmarks/bench_cursor_walks.py
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

from fastmcp import Client
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from ragbudget_server.mcp.answers import SearchAnswer
from ragbudget_server.store import DocumentStore

sys.path.insert(0, str(Path(__file__).parent))
import doc_figures

STDLIB = Path(sysconfig.get_paths()["stdlib"])
PACKAGES = ["json", "logging"]
CHUNK_TOKENS = 16
RAGBUDGET = Path(sys.executable).with_name("ragbudget")
QUERIES = [
    "decode a JSON document", "rotating file handler", "encode a string with escapes",
    "format a log record", "JSONDecodeError position", "logger propagate to parent",
    "sort keys and indent", "socket handler pickles records", "object_hook and object_pairs_hook",
    "dictConfig formatters", "skip keys that are not strings", "queue listener thread",
    "allow_nan infinity", "exception traceback in the message", "scanner for numbers",
    "SMTP handler mail host", "separators item and key", "level names and numbers",
    "zzz no word matches", "{}()",
]  # fmt: skip
SHAPES: list[dict[str, Any]] = [  # the default profile's walls stop answers at 9,000 tokens
    {"limit": 200, "max_tokens": 9_000, "evidence": False},
    {"limit": 200, "max_tokens": 8_000, "evidence": True},
    {"limit": 150, "max_tokens": 9_000, "evidence": False, "format": "json"},
    {"limit": 120, "max_tokens": 6_000, "evidence": True, "max_per_source": 40},
]
MOST_PAGES = 2000
RESTART_AFTER = 10
"""Pages of the restart walk read over stdio before that process stops (a walk reads 20-45)."""
WALKS: list[dict[str, Any]] = []
"""Each walk's figures, as `_line` prints them."""

Call = Callable[[dict[str, Any]], Awaitable[SearchAnswer]]


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONUNBUFFERED"] = "1"
    env.pop("RAGBUDGET_AUTH_TOKEN", None)
    return env


def _answer(result: Any) -> SearchAnswer:
    """A `search` tool result's page, `_meta["ragbudget"]` (an error result stops the run)."""
    if result.is_error:
        raise RuntimeError(f"search failed: {result.content}")
    return SearchAnswer.model_validate((result.meta or {})["ragbudget"])


@contextlib.asynccontextmanager
async def _stdio(db: Path) -> AsyncIterator[Call]:
    params = StdioServerParameters(
        command=str(RAGBUDGET), args=["serve", "--db", str(db)], env=_env()
    )
    with open(os.devnull, "w") as quiet:
        async with (
            stdio_client(params, errlog=quiet) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()

            async def call(arguments: dict[str, Any]) -> SearchAnswer:
                return _answer(await session.call_tool("search", arguments))

            yield call


async def _quiet(message: Any) -> None:
    """The server's notices of a page stopped at a wall are expected here."""
    del message


@contextlib.asynccontextmanager
async def _http(db: Path) -> AsyncIterator[Call]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    command = [str(RAGBUDGET), "serve", "--db", str(db), "--transport", "http",
               "--port", str(port)]  # fmt: skip
    proc = subprocess.Popen(
        command, env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + 120
        while True:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"ragbudget serve over HTTP did not start ({proc.poll()})")
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.5):
                break
            await asyncio.sleep(0.1)
        async with Client(f"http://127.0.0.1:{port}/mcp", log_handler=_quiet) as client:

            async def call(arguments: dict[str, Any]) -> SearchAnswer:
                return _answer(await client.call_tool_mcp("search", arguments))

            yield call
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


async def _pages(
    call: Call, ask: dict[str, Any], seen: Counter[str], cursor: str | None, most: int
) -> tuple[str | None, int]:
    """Up to `most` pages of `ask` from `cursor`, their accounted ids counted into `seen`: the
    cursor that continues (None: the walk ended) and how many pages were read."""
    for n in range(1, most + 1):
        page = await call({**ask, "cursor": cursor} if cursor is not None else ask)
        seen.update(page.accounted_ids())
        if page.next_cursor is None:
            return None, n
        cursor = page.next_cursor
    return cursor, most


def _line(where: str, ask: dict[str, Any], pages: int, seen: Counter[str], every: set[str],
          ended: bool, seconds: float) -> tuple[int, int]:  # fmt: skip
    missing = len(every - set(seen))
    repeated = sum(1 for k in seen.values() if k > 1)
    shape = f"{'evidence' if ask['evidence'] else 'plain'} {ask.get('format', 'text')} " \
            f"limit={ask['limit']} max_tokens={ask['max_tokens']}"  # fmt: skip
    print(f"{where:<8} {ask['query'][:30]:<30} {shape:<44} {pages:>5} {len(seen):>9} "
          f"{missing:>7} {repeated:>8} {'yes' if ended else 'NO':>5} {seconds:>6.1f}",
          flush=True)  # fmt: skip
    WALKS.append({"via": where, "pages": pages, "accounted": len(seen), "missing": missing,
                  "repeated": repeated, "ended": ended, "seconds": seconds})  # fmt: skip
    return missing + (0 if ended else 1), repeated


async def _walks(db: Path, every: set[str]) -> int:
    print(f"{'via':<8} {'query':<30} {'mode, limit, budget':<44} {'pages':>5} "
          f"{'accounted':>9} {'missing':>7} {'repeated':>8} {'ended':>5} {'s':>6}")  # fmt: skip
    bad = 0
    async with _stdio(db) as stdio, _http(db) as http:
        for n, query in enumerate(QUERIES):  # each transport: every shape, 10 queries
            name, call = ("stdio", stdio) if n % 2 == 0 else ("http", http)
            ask = {"query": query, **SHAPES[(n // 2) % len(SHAPES)]}
            seen: Counter[str] = Counter()
            start = time.perf_counter()
            end, pages = await _pages(call, ask, seen, None, MOST_PAGES)
            missing, repeated = _line(name, ask, pages, seen, every, end is None,
                                      time.perf_counter() - start)  # fmt: skip
            bad += missing + repeated
    ask = {"query": QUERIES[0], **SHAPES[1]}  # half over stdio, the rest from a new process
    seen = Counter()
    start = time.perf_counter()
    async with _stdio(db) as call:
        cursor, first = await _pages(call, ask, seen, None, RESTART_AFTER)
    if cursor is None:
        raise RuntimeError("the walk ended before the restart: ask for smaller pages")
    async with _http(db) as call:
        end, rest = await _pages(call, ask, seen, cursor, MOST_PAGES)
    missing, repeated = _line("restart", ask, first + rest, seen, every, end is None,
                              time.perf_counter() - start)  # fmt: skip
    return bad + missing + repeated


def main() -> int:
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="ragbudget-cursor-walks-") as tmp:
        db = Path(tmp) / "db"
        store = DocumentStore(path=db)
        report = store.ingest([STDLIB / p for p in PACKAGES], chunk_tokens=CHUNK_TOKENS, overlap=0)
        every = set(store.collection.get(include=[])["ids"])
        store.close()
        built = time.perf_counter() - started
        print(
            f"store: {len(every):,} chunks of {report.files_ingested} files "
            f"({', '.join(PACKAGES)}; chunk_tokens={CHUNK_TOKENS}), built in {built:.0f} s"
        )
        bad = asyncio.run(_walks(db, every))
    total = time.perf_counter() - started
    print(
        f"{len(QUERIES) + 1} walks, every chunk accounted once in each: "
        f"{'yes' if bad == 0 else 'NO'}; {total:.0f} s in all"
    )
    doc_figures.save(
        __file__,
        {"chunks": len(every), "packages": PACKAGES, "chunk_tokens": CHUNK_TOKENS,
         "restart_after": RESTART_AFTER, "seconds": total, "walks": WALKS},
    )  # fmt: skip
    return 0 if bad == 0 else 1


def table(results: dict[str, Any]) -> str:
    """docs/mcp.md's table: whole-store walks by cursor, by transport."""
    labels = {"stdio": "over stdio", "http": "over streamable HTTP",
              "restart": f"{results['restart_after']} pages over stdio, the rest from a new "
                         "process over HTTP"}  # fmt: skip
    rows = []
    for via, label in labels.items():
        walks = [w for w in results["walks"] if w["via"] == via]
        pages = sorted(w["pages"] for w in walks)
        seconds = sorted(w["seconds"] for w in walks)
        rows.append(
            (label, len(walks), f"{pages[0]}-{pages[-1]}" if len(walks) > 1 else pages[0],
             f"{sum(w['ended'] for w in walks)}", f"{sum(w['missing'] for w in walks)}",
             f"{sum(w['repeated'] for w in walks)}",
             f"{seconds[0]:.0f}-{seconds[-1]:.0f} s" if len(walks) > 1 else f"{seconds[0]:.0f} s")
        )  # fmt: skip
    head = ["walks", "how many", "pages a walk", "ended", "missing", "repeated", "a walk took"]
    return (
        f"A store of {results['chunks']:,} chunks (the standard library's "
        f"{' and '.join(f'`{p}`' for p in results['packages'])}, {results['chunk_tokens']}-token "
        "chunks); each walk counts the chunks its pages account for against every chunk of the "
        f"store. The run took {results['seconds']:.0f} s.\n\n"
        + doc_figures.grid(head, rows, "lrrrrrr")
    )


if __name__ == "__main__":
    raise SystemExit(main())
