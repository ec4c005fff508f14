"""What TokenBudgetMiddleware costs per tool call, next to no middleware and to fastmcp's own
`ResponseLimitingMiddleware`, on the same results.

Three copies of one server (a small dict, a 5,000-item list, a ~200K-token log) are called
through fastmcp's in-memory client, interleaved call by call in one run; each figure is a
median, each ratio is against the server without middleware (the order of the variants
rotates from round to round). ResponseLimitingMiddleware gets
a byte limit of 4 bytes per token of the budget (about what the budget holds in English); it
cuts bytes, so its JSON no longer parses, and it has no continuation. TokenBudgetMiddleware
is measured with the default counter (the calibrated estimate) and with tiktoken cl100k.

Then paging: `more` through a single line of 648,889 characters (far over any budget, so each
page is cut inside the line), timing each page; the last pages over the first ones show whether
a page's cost grows with what is left of the line (it did before `cut_text` counted a prefix
first: docs/middleware.md).

    uv run --all-packages python benchmarks/bench_middleware.py
"""

from __future__ import annotations

import asyncio
import json
import logging
import statistics
import time
from typing import Any

from fastmcp import Client, FastMCP
from fastmcp.server.middleware import Middleware
from fastmcp.server.middleware.response_limiting import ResponseLimitingMiddleware
from ragbudget import use_bundled_tiktoken_files
from ragbudget.middleware import TokenBudgetMiddleware
from ragbudget.middleware.paging import find_more_call

BUDGET = 8000
ROUNDS = {"small": 200, "list_5000": 15, "log_200k": 15}
LOG = "".join(
    f"2026-11-23T12:{i // 60 % 60:02d}:{i % 60:02d}Z INFO worker-{i % 7} GET /api/v1/items/{i} "
    f"status={200 if i % 13 else 500} bytes={i * 37 % 9000} took={i % 97}ms\n"
    for i in range(6500)
)
ITEMS = [{"id": i, "name": f"item {i}", "tags": ["red", "grün"][: i % 3]} for i in range(5000)]
LINE = " ".join(f"word{i}." for i in range(60_000))  # one line, 648,889 characters
PAGE_BUDGET = 4000


def _server(middleware: Middleware | None) -> FastMCP[Any]:
    mcp: FastMCP[Any] = FastMCP("bench")

    @mcp.tool
    def small() -> dict[str, Any]:
        return {"ok": True, "version": "1.2.3"}

    @mcp.tool
    def list_5000() -> list[dict[str, Any]]:
        return ITEMS

    @mcp.tool
    def log_200k() -> str:
        return LOG

    if middleware is not None:
        mcp.add_middleware(middleware)
    return mcp


def _json_ok(result: Any) -> str:
    text = result.content[0].text
    if not text.lstrip().startswith(("[", "{")):
        return "-"
    try:
        json.loads(text)
    except ValueError:
        return "broken"
    return "valid"


async def _measure(use_tiktoken: bool) -> None:
    variants: dict[str, Middleware | None] = {
        "none": None,
        "ResponseLimiting": ResponseLimitingMiddleware(max_size=BUDGET * 4),
        "TokenBudget (estimate)": TokenBudgetMiddleware(BUDGET),
    }
    if use_tiktoken:
        variants["TokenBudget (cl100k)"] = TokenBudgetMiddleware(
            BUDGET, counter="tiktoken:cl100k_base"
        )
    clients = {name: Client(_server(mw)) for name, mw in variants.items()}
    for client in clients.values():
        await client.__aenter__()
    try:
        header = "".join(f"{name:>24}" for name in variants)
        print(f"{'result':<10}{header}   (median ms per call; ratio to none; JSON after the cut)")
        for tool, rounds in ROUNDS.items():
            times: dict[str, list[float]] = {name: [] for name in variants}
            shapes: dict[str, set[str]] = {name: set() for name in variants}
            for client in clients.values():  # warm up: imports, schema caches
                await client.call_tool_mcp(tool, {})
            order = list(clients)
            for round_ in range(rounds):
                for name in order[round_ % len(order) :] + order[: round_ % len(order)]:
                    start = time.perf_counter()
                    result = await clients[name].call_tool_mcp(tool, {})
                    times[name].append(time.perf_counter() - start)
                    shapes[name].add(_json_ok(result))
            base = statistics.median(times["none"])
            cells = []
            for name in variants:
                median = statistics.median(times[name])
                shape = "/".join(sorted(shapes[name]))
                cells.append(f"{median * 1e3:8.2f} {median / base:5.2f}x {shape:>7}")
            print(f"{tool:<10}" + "".join(f"{cell:>24}" for cell in cells))
    finally:
        for client in clients.values():
            await client.__aexit__(None, None, None)


async def _paging(counter: str) -> None:
    """`more` from the first page of LINE to its last, timing each call."""
    mcp: FastMCP[Any] = FastMCP("bench-paging")

    @mcp.tool
    def one_line() -> str:
        return LINE

    mcp.add_middleware(TokenBudgetMiddleware(PAGE_BUDGET, counter=counter))
    async with Client(mcp) as client:
        result = await client.call_tool_mcp("one_line", {})
        found = find_more_call(result.content[-1].text)
        times = []
        while found:
            start = time.perf_counter()
            args = {"handle": found[0], "offset": found[1]}
            result = await client.call_tool_mcp("more", args)
            times.append(time.perf_counter() - start)
            found = find_more_call(result.content[-1].text)
    first, last = statistics.median(times[:5]), statistics.median(times[-5:])
    print(
        f"{counter:<24}{len(times):>6} pages {sum(times):8.2f} s   first 5 {first * 1e3:7.1f} ms"
        f"   last 5 {last * 1e3:7.1f} ms   last / first {last / first:5.2f}x"
    )


def main() -> None:
    logging.getLogger("fastmcp").setLevel(logging.ERROR)  # no per-call log lines in the figures
    logging.getLogger("mcp").setLevel(logging.ERROR)
    use_tiktoken = use_bundled_tiktoken_files()
    print(
        f"budget {BUDGET:,} tokens (ResponseLimiting: {BUDGET * 4:,} bytes); "
        f"rounds {ROUNDS}; in-memory fastmcp client, variants interleaved call by call"
    )
    asyncio.run(_measure(use_tiktoken))
    print("ratio = median latency with that middleware / median latency with none (same run)")
    print(f"\npaging a {len(LINE):,}-character line at {PAGE_BUDGET:,} tokens a page (median ms)")
    for counter in ("estimate", *(["tiktoken:cl100k_base"] if use_tiktoken else [])):
        asyncio.run(_paging(counter))
    print("last / first near 1: a page costs the same wherever it is in the line")


if __name__ == "__main__":
    main()
