"""A server's memory over many searches: RSS after 1,000 and after 10,000 `search` calls.

Goal (issue 42): the RSS of a `ragbudget serve` process after 10,000 searches within 10% of its
RSS after 1,000. A store is built from parts of the standard library; a real server process is
started over stdio (`ragbudget serve --db DIR`), and fastmcp's client sends it searches of
varied queries, limits, budgets and formats, following a page's `next_cursor` one time in
four (each first page mints a cursor). The server's resident set is read from
`/proc/<pid>/status` (Linux only) after each checkpoint.

    uv run --all-packages python benchmarks/bench_memory.py [--quick]
"""

from __future__ import annotations

import asyncio
import os
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from fastmcp import Client
from fastmcp.client.transports import StdioTransport

sys.path.insert(0, str(Path(__file__).parent))
import doc_figures
from _corpus import STDLIB
from ragbudget_server.store import DocumentStore

PACKAGES = ("json", "email", "asyncio", "logging", "http", "xml", "importlib", "unittest")
WORDS = [
    "parse",
    "decode",
    "encode",
    "header",
    "message",
    "event",
    "loop",
    "task",
    "cancel",
    "timeout",
    "handler",
    "record",
    "format",
    "request",
    "response",
    "status",
    "element",
    "tree",
    "import",
    "module",
    "path",
    "test",
    "assert",
    "mock",
    "file",
    "socket",
    "stream",
    "buffer",
    "error",
    "retry",
    "charset",
    "address",
    "date",
    "queue",
    "lock",
    "thread",
    "future",
    "callback",
]


def _rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    msg = f"no VmRSS for process {pid}"
    raise RuntimeError(msg)


def _server_pid(command: str) -> int:
    """The child of this process running `command` (the stdio transport does not expose it)."""
    me = os.getpid()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid == me and command in cmdline:
            return int(entry.name)
    msg = "the server process was not found"
    raise RuntimeError(msg)


async def _run(db: Path, checkpoints: list[int]) -> list[tuple[int, int, float]]:
    command = shutil.which("ragbudget", path=str(Path(sys.executable).parent))
    if command is None:
        msg = "the ragbudget command is not installed beside this Python"
        raise RuntimeError(msg)
    transport = StdioTransport(command, ["serve", "--db", str(db)], keep_alive=False)
    rng = random.Random(42)
    out: list[tuple[int, int, float]] = []
    async with Client(transport) as client:
        pid = _server_pid(command)
        done, start = 0, time.perf_counter()
        for target in checkpoints:
            while done < target:
                query = " ".join(rng.sample(WORDS, rng.randint(1, 4)))
                args: dict[str, Any] = {
                    "query": query,
                    "limit": rng.choice((5, 10, 20, 50)),
                    "max_tokens": rng.choice((500, 1000, 2000, 4000, 8000)),
                    "format": rng.choice(("text", "text", "json")),
                }
                result = await client.call_tool_mcp("search", args)
                done += 1
                cursor = (result.meta or {}).get("ragbudget", {}).get("next_cursor")
                if cursor and rng.random() < 0.25 and done < target:
                    await client.call_tool_mcp("search", {"query": query, "cursor": cursor})
                    done += 1
            out.append((done, _rss_kib(pid), time.perf_counter() - start))
    return out


def main() -> None:
    quick = "--quick" in sys.argv
    if not Path("/proc/self/status").exists():
        print("skipped: reads RSS from /proc (Linux only)")
        return
    checkpoints = [100, 200, 1000, 2000] if quick else [200, 1000, 2000, 5000, 10000]
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "db"
        store = DocumentStore(path=db)
        paths = [STDLIB / p for p in (PACKAGES[:3] if quick else PACKAGES)]
        report = store.ingest(paths)
        store.close()
        print(f"store: {report.chunks_added:,} chunks from {report.files_ingested:,} files")
        rows = asyncio.run(_run(db, checkpoints))
    base = {n: rss for n, rss, _ in rows}[1000]
    print(f"{'searches':>9} {'RSS MiB':>8} {'vs 1,000':>9} {'seconds':>8}")
    for n, rss, seconds in rows:
        print(f"{n:>9,} {rss / 1024:>8.1f} {rss / base:>8.2f}x {seconds:>8.1f}")
    last = rows[-1]
    verdict = "met" if last[1] <= base * 1.10 else "NOT met"
    print(f"goal (RSS after {last[0]:,} within 10% of after 1,000): {verdict}")
    doc_figures.save(
        __file__,
        {"chunks": report.chunks_added,
         "checkpoints": [{"searches": n, "rss_kib": rss, "seconds": s} for n, rss, s in rows]},
    )  # fmt: skip


def table(results: dict[str, Any]) -> str:
    """docs/mcp.md's table: a server's resident set along its searches."""
    points = results["checkpoints"]
    base = next(p["rss_kib"] for p in points if p["searches"] == 1000)
    rows = [(f"{p['searches']:,}", f"{p['rss_kib'] / 1024:.0f} MiB", f"{p['rss_kib'] / base:.2f}x")
            for p in points]  # fmt: skip
    last = points[-1]
    verdict = "met" if last["rss_kib"] <= base * 1.10 else "**not met**"
    return (
        f"A store of {results['chunks']:,} chunks:\n\n"
        + doc_figures.grid(["searches", "resident set", "vs after 1,000"], rows, "rrr")
        + f"\n\nThe goal, the resident set after {last['searches']:,} searches within 10% of "
        f"after 1,000: {verdict}."
    )


if __name__ == "__main__":
    main()
