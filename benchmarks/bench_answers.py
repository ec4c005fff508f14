"""What an agent reads from `ragbudget serve` at its defaults: evidence share, size, safety.

On a store built as a new user builds it (the default counter and embedding) over a slice of
the standard library, through a real MCP client (fastmcp's in-memory transport):

1. Payload share: the share of the model-visible tokens (cl100k) that is the results' own
   text (the lines each result shows, read from its file: the structured content carries no
   texts), by budget and format (`text`, the default, and `json`).
2. The largest answer at the server's defaults, whatever `max_tokens` is asked: `search` and
   `read_document` on string-heavy code (`pydoc_data/topics.py`), by exact cl100k and o200k
   (the goal: at most 14,500, Claude Code's 25,000 over ~1.7).
3. The default estimate's under-count on rendered answers (both formats), against cl100k and
   o200k: the figure behind the server's margin for inexact counters (`ESTIMATE_MARGIN`).

    uv run --all-packages python benchmarks/bench_answers.py
"""

from __future__ import annotations

import asyncio
import logging
import statistics
import sys
import sysconfig
import tempfile
from pathlib import Path
from typing import Any

from fastmcp import Client
from mcp_types import TextContent
from ragbudget import get_counter, use_bundled_tiktoken_files
from ragbudget_server.mcp import ServerSettings, create_server
from ragbudget_server.mcp.answers import SearchAnswer
from ragbudget_server.store import DocumentStore

sys.path.insert(0, str(Path(__file__).parent))
import doc_figures

STDLIB = Path(sysconfig.get_paths()["stdlib"])
CORPUS = ["json", "email", "logging", "textwrap.py", "pydoc_data/topics.py", "csv.py"]
QUERIES = [
    "decode a JSON document into Python objects",
    "parse the headers of an email message",
    "how operators bind and which comes first",
    "wrap long lines of text to a width",
    "attach a file to a multipart message",
    "rotate log files when they grow",
    "format a log record with the time",
    "read rows from a comma separated file",
    "what happens in a with statement",
    "escape special characters in a string literal",
]
BUDGETS = [600, 1000, 2000, 4000, 8192]


def _visible(result: Any) -> str:
    return "\n".join(b.text for b in result.content if isinstance(b, TextContent))


def _shown_lines(source: str, start: int, end: int) -> str:
    """Lines `start` to `end` of the file `source`: what a result shows of it."""
    lines = Path(source).read_text(encoding="utf-8").splitlines(keepends=True)
    return "".join(lines[start - 1 : end])


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def _measure(db: Path) -> dict[str, Any]:
    cl100k, o200k = get_counter("tiktoken:cl100k_base"), get_counter("tiktoken:o200k_base")
    estimate = get_counter("estimate")
    server = create_server(ServerSettings(db=db))  # the defaults a new user gets

    async def quiet(message: Any) -> None:
        del message

    shares: dict[tuple[str, int], list[float]] = {}
    under: dict[tuple[str, str], list[float]] = {}
    async with Client(server, log_handler=quiet) as client:
        for fmt in ("text", "json"):
            for budget in BUDGETS:
                for query in QUERIES:
                    args = {"query": query, "max_tokens": budget, "limit": 50, "format": fmt}
                    result = await client.call_tool_mcp("search", args)
                    text = _visible(result)
                    response = SearchAnswer.model_validate((result.meta or {})["ragbudget"])
                    payload = sum(
                        cl100k.count(_shown_lines(r.source, r.start_line, r.end_line))
                        for r in response.results
                    )
                    shares.setdefault((fmt, budget), []).append(payload / cl100k.count(text))
                    est = estimate.count(text)
                    for name, real in (("cl100k", cl100k), ("o200k", o200k)):
                        n = real.count(text)
                        under.setdefault((fmt, name), []).append(max(0.0, (n - est) / n))
        print("1. payload share: results' own text / model-visible tokens (cl100k), median")
        print(f"{'format':>6} " + " ".join(f"{b:>7,}" for b in BUDGETS))
        for fmt in ("text", "json"):
            cells = " ".join(f"{statistics.median(shares[fmt, b]):>7.0%}" for b in BUDGETS)
            print(f"{fmt:>6} {cells}")

        print("\n2. largest answer at the server's defaults (max_tokens=1,000,000 asked)")
        print(f"{'call':>34} {'cl100k':>7} {'o200k':>7}")
        largest = []
        calls = [
            ("search", {"query": "operator precedence", "max_tokens": 1_000_000, "limit": 200}),
            ("search", {"query": "string literal", "max_tokens": 1_000_000, "limit": 200,
                        "format": "json"}),
            ("read_document", {"source": str(STDLIB / "pydoc_data" / "topics.py"),
                               "max_tokens": 1_000_000}),
            ("read_document", {"source": str(STDLIB / "pydoc_data" / "topics.py"),
                               "max_tokens": 1_000_000, "format": "json"}),
        ]  # fmt: skip
        for name, args in calls:
            result = await client.call_tool_mcp(name, args)
            text = _visible(result)
            label = f"{name} ({args.get('format', 'text')})"
            print(f"{label:>34} {cl100k.count(text):>7,} {o200k.count(text):>7,}")
            largest.append({"call": name, "format": args.get("format", "text"),
                            "cl100k": cl100k.count(text), "o200k": o200k.count(text)})  # fmt: skip

    print("\n3. the default estimate's under-count on rendered answers (share of real tokens)")
    print(f"{'format':>6} {'vs':>7} {'median':>7} {'p99':>7} {'max':>7} {'n':>4}")
    for (fmt, name), values in sorted(under.items()):
        print(
            f"{fmt:>6} {name:>7} {statistics.median(values):>7.1%} {_pct(values, 0.99):>7.1%} "
            f"{max(values):>7.1%} {len(values):>4}"
        )
    return {
        "budgets": BUDGETS, "queries": len(QUERIES),
        "shares": {fmt: [statistics.median(shares[fmt, b]) for b in BUDGETS]
                   for fmt in ("text", "json")},
        "largest": largest,
        "under": [{"format": fmt, "vs": name, "median": statistics.median(values),
                   "p99": _pct(values, 0.99), "max": max(values), "n": len(values)}
                  for (fmt, name), values in sorted(under.items())],
    }  # fmt: skip


def main() -> None:
    use_bundled_tiktoken_files()
    # fastmcp echoes each log message sent to the client below its level check: mute it here.
    logging.getLogger("fastmcp.server.context.to_client").setLevel(logging.CRITICAL + 1)
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "db"
        store = DocumentStore(path=db)  # the defaults: exact counter, hashing embedding
        store.ingest([STDLIB / name for name in CORPUS])
        store.close()
        results = asyncio.run(_measure(db))
    doc_figures.save(__file__, results)


def table(results: dict[str, Any]) -> str:
    """docs/answers.md's table: the share of an answer's tokens that is the results' text."""
    labels = {"text": "text (default)", "json": "json"}
    rows = [[labels[fmt], *(f"{v:.0%}" for v in values)]
            for fmt, values in results["shares"].items()]  # fmt: skip
    return doc_figures.grid(["format", *(f"{b:,}" for b in results["budgets"])], rows)


def table_largest(results: dict[str, Any]) -> str:
    """docs/answers.md's table: the largest answer at the server's defaults."""
    rows = [(f"`{r['call']}`, {r['format']}", f"{r['cl100k']:,}", f"{r['o200k']:,}")
            for r in results["largest"]]  # fmt: skip
    return doc_figures.grid(["call", "cl100k", "o200k"], rows, "lrr")


def table_under(results: dict[str, Any]) -> str:
    """docs/answers.md's table: how far the default estimate under-counts rendered answers."""
    rows = [(r["format"], r["vs"], f"{r['median']:.1%}", f"{r['p99']:.1%}", f"{r['max']:.1%}",
             r["n"]) for r in results["under"]]  # fmt: skip
    head = ["format", "against", "median", "99th percentile", "largest", "answers"]
    return doc_figures.grid(head, rows, "llrrrr")


if __name__ == "__main__":
    main()
