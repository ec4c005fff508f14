"""What `ragbudget guard` adds to a tool call, beside the direct call to the same server.

The reference filesystem server from npm (stdio) reads a small file (~100 bytes) and a large one
(a ~400 KB log); the 'everything' server (streamable HTTP) echoes a short and a ~200 KB message.
Each is called directly with the official `mcp` client and through the guard (default walls:
9,000 tokens, 40,000 characters), the two interleaved call by call; figures are medians in
milliseconds. A large result through the guard is its first page (cut to the walls): the
difference is the proxy hop plus measuring and cutting, less the bytes not sent.

Needs node and npm (the servers are installed once into .cache/npm, as for the tests).

    uv run --all-packages python benchmarks/bench_guard.py
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from mcp import Client, StdioServerParameters

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
sys.path.insert(0, str(Path(__file__).parent))
import doc_figures
from node_servers import (
    EVERYTHING,
    FILESYSTEM,
    NodeServersUnavailable,
    entry_point,
    node_servers,
)

GUARD = [sys.executable, "-c", "from ragbudget_server.cli import main; main()", "guard"]
ROUNDS = {"small": 60, "large": 12}
ROWS: list[dict[str, Any]] = []
"""Each comparison's medians, as printed."""
LOG = "".join(f"{i:06d} INFO GET /api/items/{i} status=200 took={i % 97}ms\n" for i in range(8000))


def guarded(*args: str) -> StdioServerParameters:
    return StdioServerParameters(command=GUARD[0], args=[*GUARD[1:], *args], env=dict(os.environ))


async def timed(client: Client, tool: str, arguments: dict[str, Any]) -> float:
    start = time.perf_counter()
    await client.call_tool(tool, arguments)
    return (time.perf_counter() - start) * 1000


async def compare(
    label: str, direct: Client, guard: Client, tool: str, cases: dict[str, Any]
) -> None:
    for size, arguments in cases.items():
        for client in (direct, guard):  # warm both (first-call imports, caches)
            await client.call_tool(tool, arguments)
        times: dict[str, list[float]] = {"direct": [], "guard": []}
        for i in range(ROUNDS[size]):
            order = [("direct", direct), ("guard", guard)]
            for name, client in order if i % 2 else reversed(order):
                times[name].append(await timed(client, tool, arguments))
        plain, wrapped = (statistics.median(times[k]) for k in ("direct", "guard"))
        print(f"| {label} | {size} | {plain:7.1f} | {wrapped:7.1f} | {wrapped - plain:+7.1f} |")
        ROWS.append({"server": label, "size": size, "direct_ms": plain, "guard_ms": wrapped})


@contextlib.asynccontextmanager
async def everything_http(folder: Path) -> AsyncIterator[str]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {**os.environ, "PORT": str(port)}
    node = shutil.which("node") or "node"
    command = [node, str(entry_point(folder, EVERYTHING)), "streamableHttp"]
    proc = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(300):
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
                break
            await asyncio.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(timeout=15)


async def main() -> None:
    try:
        folder = node_servers()
    except NodeServersUnavailable as exc:
        print(f"skipped: {exc}")
        return
    print("| server | result | direct ms | guard ms | added ms |")
    print("|---|---|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "small.txt").write_text("a small file: one line of text, well within any wall\n")
        (root / "large.log").write_text(LOG)
        server = ["node", str(entry_point(folder, FILESYSTEM)), str(root)]
        direct_params = StdioServerParameters(
            command=server[0], args=server[1:], env=dict(os.environ)
        )
        async with Client(direct_params) as direct, Client(guarded("--", *server)) as guard:
            cases = {
                "small": {"path": str(root / "small.txt")},
                "large": {"path": str(root / "large.log")},
            }
            await compare("filesystem, stdio", direct, guard, "read_text_file", cases)
    async with contextlib.AsyncExitStack() as stack:
        url = await stack.enter_async_context(everything_http(folder))
        direct = await stack.enter_async_context(Client(url))
        guard = await stack.enter_async_context(Client(guarded("--url", url)))
        cases = {"small": {"message": "hello"}, "large": {"message": LOG[:200_000]}}
        await compare("everything, HTTP", direct, guard, "echo", cases)
    doc_figures.save(__file__, {"rounds": ROUNDS, "rows": ROWS})


WHAT = {
    ("filesystem, stdio", "small"): "small file (~50 bytes)",
    ("filesystem, stdio", "large"): "400 KB log (cut to its first page)",
    ("everything, HTTP", "small"): "`echo` of 5 characters",
    ("everything, HTTP", "large"): "`echo` of 200 KB (cut to its first page)",
}


def table(results: dict[str, Any]) -> str:
    """docs/guard.md's table: a call direct and through the guard, medians."""
    rows = [(r["server"], WHAT.get((r["server"], r["size"]), r["size"]), f"{r['direct_ms']:.1f}",
             f"{r['guard_ms']:.1f}", f"{r['guard_ms'] - r['direct_ms']:+.1f}")
            for r in results["rows"]]  # fmt: skip
    head = ["server", "result", "direct ms", "guard ms", "added ms"]
    return doc_figures.grid(head, rows, "llrrr")


if __name__ == "__main__":
    asyncio.run(main())
