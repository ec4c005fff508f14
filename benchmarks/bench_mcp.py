"""The MCP protocol's overhead: `search` through fastmcp's in-memory client vs `store.search`.

Both sides run the same queries with the same arguments on the same open store, interleaved
call by call in one run (so machine noise hits both alike); the figure is the ratio of medians.
The in-memory client is a real MCP session (JSON-RPC messages, argument validation, schema'd
structured output) minus a socket or pipe.

    uv run --all-packages python benchmarks/bench_mcp.py
"""

from __future__ import annotations

import asyncio
import logging
import statistics
import sys
import sysconfig
import tempfile
import time
from pathlib import Path
from typing import Any

from fastmcp import Client
from ragbudget import get_counter, use_bundled_tiktoken_files
from ragbudget_server.mcp import ServerSettings, create_server
from ragbudget_server.store import DocumentStore

sys.path.insert(0, str(Path(__file__).parent))
import doc_figures

STDLIB = Path(sysconfig.get_paths()["stdlib"])
CORPUS = ["json", "email", "textwrap.py", "pydoc_data/topics.py"]
QUERIES = [
    "decode a JSON document",
    "parse email headers",
    "operator precedence",
    "wrap long lines of text",
    "MIME multipart message",
    "comparison operators chaining",
]
ROUNDS = 8
CASES = [  # (limit, max_tokens): the store bench's case, a default call, a tight one
    (50, 4000),
    (10, 8192),
    (20, 1000),
]


def _counter_spec() -> str | None:
    return "tiktoken:cl100k_base" if use_bundled_tiktoken_files() else None


async def _measure(store: DocumentStore, settings: ServerSettings) -> list[dict[str, Any]]:
    server = create_server(settings, store=store)

    async def quiet(message: Any) -> None:  # truncation warnings are expected here
        del message

    rows = []
    async with Client(server, log_handler=quiet) as client:
        print(f"{'limit':>5} {'max_tokens':>10} {'store ms':>9} {'mcp ms':>8} {'ratio':>6}")
        for limit, budget in CASES:
            direct: list[float] = []
            protocol: list[float] = []
            args: dict[str, Any] = {"limit": limit, "max_tokens": budget}
            for query in QUERIES:  # warm both paths (caches, first-call imports)
                store.search(query, **args)
                await client.call_tool_mcp("search", {"query": query, **args})
            for _ in range(ROUNDS):
                for query in QUERIES:
                    start = time.perf_counter()
                    store.search(query, **args)
                    direct.append(time.perf_counter() - start)
                    start = time.perf_counter()
                    result = await client.call_tool_mcp("search", {"query": query, **args})
                    protocol.append(time.perf_counter() - start)
                    assert not result.is_error, result
            d, p = statistics.median(direct) * 1e3, statistics.median(protocol) * 1e3
            print(f"{limit:>5} {budget:>10,} {d:>9.2f} {p:>8.2f} {p / d:>5.2f}x")
            rows.append({"limit": limit, "max_tokens": budget, "store_ms": d, "mcp_ms": p})
    return rows


def main() -> None:
    logging.getLogger("fastmcp").setLevel(logging.ERROR)  # no per-call log lines in the figures
    spec = _counter_spec()
    counter = get_counter(spec)
    with tempfile.TemporaryDirectory(prefix="ragbudget-bench-mcp-") as tmp:
        store = DocumentStore(path=Path(tmp) / "db", counter=counter)
        start = time.perf_counter()
        report = store.ingest([STDLIB / name for name in CORPUS])
        print(
            f"store: {report.chunks_added:,} chunks from {report.files_ingested} stdlib files "
            f"in {time.perf_counter() - start:.1f}s; counter {counter.name}; "
            f"{len(QUERIES)} queries x {ROUNDS} rounds per case, medians"
        )
        settings = ServerSettings(db=Path(tmp) / "db", counter=spec)
        rows = asyncio.run(_measure(store, settings))
        chunks = report.chunks_added
    print(
        "ratio = median latency of search through the in-memory MCP client / store.search "
        "(same store, same arguments, interleaved)"
    )
    doc_figures.save(
        __file__,
        {"chunks": chunks, "counter": counter.name, "queries": len(QUERIES), "rounds": ROUNDS,
         "cases": rows},
    )  # fmt: skip


def table(results: dict[str, Any]) -> str:
    """docs/mcp.md's table: `search` through the in-memory MCP client against the store's."""
    rows = [(r["limit"], f"{r['max_tokens']:,}", f"{r['store_ms']:.1f} ms", f"{r['mcp_ms']:.1f} ms",
             f"{r['mcp_ms'] / r['store_ms']:.2f}x") for r in results["cases"]]  # fmt: skip
    return (
        f"{results['chunks']:,} chunks, counted with `{results['counter']}`; medians of "
        f"{results['queries']} queries x {results['rounds']} rounds, interleaved:\n\n"
        + doc_figures.grid(["limit", "max_tokens", "store", "through MCP", "ratio"], rows, "rrrrr")
    )


if __name__ == "__main__":
    main()
