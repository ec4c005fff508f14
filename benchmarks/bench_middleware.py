"""What TokenBudgetMiddleware costs per tool call, next to no middleware and to fastmcp's own
`ResponseLimitingMiddleware`, on the same results.

Copies of one server are called through fastmcp's in-memory client, interleaved call by call;
its tools return a small dict and results of 200 KB and 2 MB: a log, indented code (the
standard library's sources) and a JSON list. Each figure is a median over the rounds; the whole
measurement runs 3 times, and the summary gives TokenBudget over ResponseLimiting in each run
and their median (the goal: at most 3x). ResponseLimitingMiddleware gets a byte limit of 4
bytes per token of the budget; it cuts bytes, so its JSON no longer parses, and it has no
continuation. TokenBudgetMiddleware is measured with the default counter (`exact`: the larger
of the cl100k and o200k counts, by bpe-openai) and with the `tiktoken:o200k_base` spec.

Then paging: `more` through a single line of 648,889 characters (far over any budget, so each
page is cut inside the line), timing each page; the last pages over the first ones show whether
a page's cost grows with what is left of the line.

    uv run --all-packages python benchmarks/bench_middleware.py
"""

from __future__ import annotations

import asyncio
import json
import logging
import statistics
import sys
import sysconfig
import time
from pathlib import Path
from typing import Any

from fastmcp import Client, FastMCP
from fastmcp.server.middleware import Middleware
from fastmcp.server.middleware.response_limiting import ResponseLimitingMiddleware
from ragbudget import get_counter, use_bundled_tiktoken_files
from ragbudget.middleware import TokenBudgetMiddleware
from ragbudget.pages.remainder import find_more_call

sys.path.insert(0, str(Path(__file__).parent))
import doc_figures

BUDGET = 8000
STDLIB = Path(sysconfig.get_paths()["stdlib"])
_LOG_LINE = (
    "2026-11-23T12:{m:02d}:{s:02d}Z INFO worker-{w} GET /api/v1/items/{i} "
    "status={st} bytes={b} took={t}ms\n"
)
_LOG = "".join(
    _LOG_LINE.format(
        m=i // 60 % 60, s=i % 60, w=i % 7, i=i, st=200 if i % 13 else 500, b=i * 37 % 9000, t=i % 97
    )
    for i in range(30_000)
)
_CODE = "".join(p.read_text(encoding="utf-8") for p in sorted(STDLIB.glob("*.py"))[:200])
_ITEMS = [{"id": i, "name": f"item {i}", "tags": ["red", "grün"][: i % 3]} for i in range(60_000)]


def _sized(text: str, size: int) -> str:
    return (text * (size // len(text) + 1))[:size]


def _items(size: int) -> list[dict[str, Any]]:
    n, total = 0, 2
    while total < size:
        total += len(json.dumps(_ITEMS[n % len(_ITEMS)], ensure_ascii=False)) + 1
        n += 1
    return [_ITEMS[i % len(_ITEMS)] for i in range(n)]


RESULTS: dict[str, Any] = {
    "small": {"ok": True, "version": "1.2.3"},
    "log_200k": _sized(_LOG, 200_000),
    "code_200k": _sized(_CODE, 200_000),
    "json_200k": _items(200_000),
    "log_2m": _sized(_LOG, 2_000_000),
    "code_2m": _sized(_CODE, 2_000_000),
    "json_2m": _items(2_000_000),
}
ROUNDS = {"small": 100, "log_200k": 15, "code_200k": 15, "json_200k": 15}
ROUNDS |= {"log_2m": 7, "code_2m": 7, "json_2m": 7}
LINE = " ".join(f"word{i}." for i in range(60_000))  # one line, 648,889 characters
PAGE_BUDGET = 4000
RUNS = 3


def _server(middleware: Middleware | None) -> FastMCP[Any]:
    mcp: FastMCP[Any] = FastMCP("bench")
    for name, value in RESULTS.items():

        def tool(value: Any = value) -> Any:
            return value

        kind = str if isinstance(value, str) else Any
        tool.__annotations__ = {"return": kind}
        mcp.tool(tool, name=name)
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


async def _measure() -> dict[str, dict[str, float]]:
    """Median ms per call of each variant on each result, variants interleaved call by call."""
    variants: dict[str, Middleware | None] = {
        "none": None,
        "ResponseLimiting": ResponseLimitingMiddleware(max_size=BUDGET * 4),
        "TokenBudget (exact)": TokenBudgetMiddleware(BUDGET),
        "TokenBudget (o200k)": TokenBudgetMiddleware(BUDGET, counter="tiktoken:o200k_base"),
    }
    clients = {name: Client(_server(mw)) for name, mw in variants.items()}
    medians: dict[str, dict[str, float]] = {}
    for client in clients.values():
        await client.__aenter__()
    try:
        header = "".join(f"{name:>24}" for name in variants)
        print(f"{'result':<10}{header}   (median ms; ratio to none; JSON after the cut)")
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
            medians[tool] = {name: statistics.median(times[name]) for name in variants}
            base = medians[tool]["none"]
            cells = []
            for name in variants:
                median = medians[tool][name]
                shape = "/".join(sorted(shapes[name]))
                cells.append(f"{median * 1e3:8.2f} {median / base:5.2f}x {shape:>7}")
            print(f"{tool:<10}" + "".join(f"{cell:>24}" for cell in cells))
    finally:
        for client in clients.values():
            await client.__aexit__(None, None, None)
    return medians


def _against_limiter(runs: list[dict[str, dict[str, float]]]) -> dict[str, Any]:
    """Each TokenBudget variant over ResponseLimiting (the goal: at most 3x), per run, and the
    median of the runs."""
    names = [n for n in runs[0]["small"] if n.startswith("TokenBudget")]
    print(f"\n{'result':<10}" + "".join(f"{n:>36}" for n in names))
    print(f"{'':<10}" + "".join(f"{'added ms / runs / median x':>36}" for _ in names))
    table: dict[str, Any] = {}
    for tool in ROUNDS:
        cells = []
        for name in names:
            ratios = [run[tool][name] / run[tool]["ResponseLimiting"] for run in runs]
            added = statistics.median(run[tool][name] - run[tool]["none"] for run in runs)
            table.setdefault(tool, {})[name] = {"ratios": ratios, "added_ms": added * 1e3}
            shown = " ".join(f"{r:.2f}" for r in ratios)
            cells.append(f"{added * 1e3:7.1f} / {shown} / {statistics.median(ratios):5.2f}x")
        print(f"{tool:<10}" + "".join(f"{cell:>36}" for cell in cells))
    print("x = median latency with TokenBudget / with ResponseLimiting (same run); goal <= 3x")
    return table


async def _paging(counter: str) -> dict[str, Any]:
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
    return {"counter": counter, "pages": len(times), "total_s": sum(times),
            "first_ms": first * 1e3, "last_ms": last * 1e3}  # fmt: skip


def main() -> None:
    logging.getLogger("fastmcp").setLevel(logging.ERROR)  # no per-call log lines in the figures
    logging.getLogger("mcp").setLevel(logging.ERROR)
    use_bundled_tiktoken_files()
    print(
        f"budget {BUDGET:,} tokens (ResponseLimiting: {BUDGET * 4:,} bytes); "
        f"rounds {ROUNDS}; in-memory fastmcp client, variants interleaved call by call; "
        f"o200k = the tiktoken:o200k_base spec ({get_counter('tiktoken:o200k_base')!r})"
    )
    runs = []
    for run in range(RUNS):
        print(f"\nrun {run + 1} of {RUNS}")
        runs.append(asyncio.run(_measure()))
    against = _against_limiter(runs)
    print(f"\npaging a {len(LINE):,}-character line at {PAGE_BUDGET:,} tokens a page (median ms)")
    paging = [asyncio.run(_paging(counter)) for counter in ("exact", "tiktoken:o200k_base")]
    print("last / first near 1: a page costs the same wherever it is in the line")
    doc_figures.save(
        __file__,
        {"budget": BUDGET, "limiter_bytes": BUDGET * 4, "runs": RUNS, "rounds": ROUNDS,
         "line_chars": len(LINE), "page_budget": PAGE_BUDGET, "against": against,
         "paging": paging},
    )  # fmt: skip


RESULT_LABELS = {"small": "small dict", "log_200k": "log, 200 KB", "code_200k": "code, 200 KB",
                 "json_200k": "JSON, 200 KB", "log_2m": "log, 2 MB", "code_2m": "code, 2 MB",
                 "json_2m": "JSON, 2 MB"}  # fmt: skip


def table(results: dict[str, Any]) -> str:
    """docs/middleware.md's table: TokenBudget over ResponseLimiting, per result and counter."""
    names = list(next(iter(results["against"].values())))
    heads = {"TokenBudget (exact)": "TokenBudget (exact, the default) / ResponseLimiting",
             "TokenBudget (o200k)": "TokenBudget (o200k) / ResponseLimiting"}  # fmt: skip
    rows = []
    for tool, cells in results["against"].items():
        shown = [RESULT_LABELS.get(tool, tool)]
        for name in names:
            ratios = cells[name]["ratios"]
            each = ", ".join(f"{r:.2f}" for r in ratios)
            shown.append(
                f"{statistics.median(ratios):.2f}x ({each}), +{cells[name]['added_ms']:.1f} ms"
            )
        rows.append(shown)
    verdicts = []
    for name in names:
        met = [RESULT_LABELS.get(tool, tool).replace(", ", " ")
               for tool, cells in results["against"].items()
               if tool != "small" and statistics.median(cells[name]["ratios"]) <= 3]  # fmt: skip
        verdicts.append(f"with {name} on {', '.join(met) or 'none of them'}")
    return (
        doc_figures.grid(["Result", *(heads.get(n, n) for n in names)], rows)
        + "\n\nThe goal, at most 3x the byte limiter on 200 KB and 2 MB results, is met "
        + "; ".join(verdicts)
        + "."
    )


def table_paging(results: dict[str, Any]) -> str:
    """docs/middleware.md's table: each `more` page's cost along one long line."""
    labels = {"exact": "exact (the default)", "tiktoken:o200k_base": "tiktoken o200k (bpe-openai)"}
    head = ["Counter", "Pages", "All pages", "First 5 (median)", "Last 5 (median)", "Last / first"]
    rows = [(labels.get(r["counter"], r["counter"]), r["pages"], f"{r['total_s']:.2f} s",
             f"{r['first_ms']:.1f} ms", f"{r['last_ms']:.1f} ms",
             f"{r['last_ms'] / r['first_ms']:.2f}x") for r in results["paging"]]  # fmt: skip
    return doc_figures.grid(head, rows, "lrrrrr")


if __name__ == "__main__":
    main()
