"""What a client's model reads of `ragbudget serve`, and what it costs.

    uv run --all-packages python benchmarks/bench_model_view.py

Over a small store (the stdlib's `json` package, `textwrap.py` and the ~0.75 MB
`pydoc_data/topics.py`), through fastmcp's in-memory client:
- the tool list's o200k tokens (paid in every session), for the default tools and with `ingest`;
- the smallest useful `search` answer (one result): its tokens, and its envelope (the answer's
  tokens less the result's own text's tokens), in text and JSON;
- the largest answers (`max_tokens=1000000`, `search` limit 200 and `read_document` on the
  bomb) under the `gemini-cli` profile, and what Gemini CLI's own cut would do to each: past
  40,000 characters it keeps the first 8,000 and the last 32,000 (gemini-cli PRs #18446 and
  #19365), so the share of the answer's lines such a cut would lose.
"""

from __future__ import annotations

import asyncio
import json
import sys
import sysconfig
import tempfile
from pathlib import Path
from typing import Any

import mcp_types as mt
from fastmcp import Client
from ragbudget import get_counter, use_bundled_tiktoken_files
from ragbudget_server.mcp import ServerSettings, create_server
from ragbudget_server.store import DocumentStore

sys.path.insert(0, str(Path(__file__).parent))
import doc_figures

STDLIB = Path(sysconfig.get_paths()["stdlib"])
GEMINI_WALL, GEMINI_HEAD, GEMINI_TAIL = 40_000, 8_000, 32_000


def _gemini_lost(text: str) -> float:
    """The share of `text`'s lines Gemini CLI's own cut would drop (0 within its wall)."""
    if len(text) <= GEMINI_WALL:
        return 0.0
    kept = text[:GEMINI_HEAD] + text[-GEMINI_TAIL:]
    lines, kept_lines = text.splitlines(), set(kept.splitlines())
    return sum(1 for line in lines if line not in kept_lines) / max(1, len(lines))


async def _quiet(message: Any) -> None:
    """The server's cut warnings: the bench prints what the model reads instead."""


def _tools_tokens(tools: list[Any], o200k: Any) -> int:
    listed = [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in tools]
    return int(o200k.count(json.dumps({"tools": listed}, separators=(",", ":"))))


async def _run(db: Path) -> dict[str, Any]:
    results: dict[str, Any] = {"smallest": {}, "gemini": []}
    o200k = get_counter("tiktoken:o200k_base")
    default = create_server(ServerSettings(db=db))
    with_ingest = create_server(ServerSettings(db=db, allow_roots=(STDLIB,)))
    async with Client(default, log_handler=_quiet) as client:
        tools = await client.list_tools()
        print(f"tool list, {len(tools)} default tools: {_tools_tokens(tools, o200k):,} o200k")
        results |= {"tools": len(tools), "tools_tokens": _tools_tokens(tools, o200k)}
        for format in ("text", "json"):
            args = {"query": "dedent common leading whitespace", "limit": 1, "format": format}
            result = await client.call_tool_mcp("search", {**args, "max_tokens": 400})
            text = result.content[0].text
            page = (result.meta or {})["ragbudget"]
            own = sum(r["tokens"] for r in page["results"])
            tokens = o200k.count(text)
            print(f"smallest search answer ({format}): {tokens} o200k, envelope {tokens - own}")
            results["smallest"][format] = {"tokens": tokens, "envelope": tokens - own}
    async with Client(with_ingest) as client:
        tools = await client.list_tools()
        print(f"tool list with ingest, {len(tools)} tools: {_tools_tokens(tools, o200k):,} o200k")
        results["tools_with_ingest_tokens"] = _tools_tokens(tools, o200k)
    gemini = mt.Implementation(name="gemini-cli-mcp-client", version="1")
    async with Client(default, client_info=gemini, log_handler=_quiet) as client:
        asks = [
            ("search", {"query": "string literal escape sequences", "limit": 200}),
            ("read_document", {"source": str(STDLIB / "pydoc_data" / "topics.py")}),
        ]
        print("\n| gemini-cli answer | format | characters | lines lost to Gemini's own cut |")
        print("| --- | --- | ---: | ---: |")
        for tool, args in asks:
            for format in ("text", "json"):
                call = {**args, "max_tokens": 1_000_000, "format": format}
                text = (await client.call_tool_mcp(tool, call)).content[0].text
                print(f"| {tool} | {format} | {len(text):,} | {_gemini_lost(text):.0%} |")
                results["gemini"].append(
                    {"tool": tool, "format": format, "chars": len(text), "lost": _gemini_lost(text)}
                )
    return results


def main() -> int:
    use_bundled_tiktoken_files()
    with tempfile.TemporaryDirectory(prefix="bench-model-view-") as tmp:
        db = Path(tmp) / "db"
        store = DocumentStore(path=db, counter=get_counter("exact"))
        store.ingest([STDLIB / "json", STDLIB / "textwrap.py", STDLIB / "pydoc_data/topics.py"])
        store.close()
        results = asyncio.run(_run(db))
    doc_figures.save(__file__, results)
    return 0


def table(results: dict[str, Any]) -> str:
    """docs/mcp.md's table: the tokens a session pays for the tools, and a small answer's."""
    rows = [
        (f"the tool list, paid in every session: the default {results['tools']} tools",
         f"{results['tools_tokens']:,}"),
        ("the same with `ingest` (`--allow-root`)", f"{results['tools_with_ingest_tokens']:,}"),
        ("the smallest `search` answer (one result), text: envelope beyond the result's own text",
         f"{results['smallest']['text']['envelope']:,}"),
        ("the same in JSON", f"{results['smallest']['json']['envelope']:,}"),
    ]  # fmt: skip
    return doc_figures.grid(["what", "o200k tokens"], rows, "lr")


def table_gemini(results: dict[str, Any]) -> str:
    """docs/mcp.md's table: the largest answers under `gemini-cli`, against Gemini's own cut."""
    rows = [(f"`{r['tool']}`", r["format"], f"{r['chars']:,}", f"{r['lost']:.0%}")
            for r in results["gemini"]]  # fmt: skip
    head = ["largest answer (`max_tokens=1000000`)", "format", "characters",
            "lines Gemini CLI's own cut would lose"]  # fmt: skip
    return doc_figures.grid(head, rows, "llrr")


if __name__ == "__main__":
    sys.exit(main())
