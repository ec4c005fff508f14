"""Drive `ragbudget serve` through a real MCP client over stdio, the way Claude Desktop does.

Offline: the server is started with the standard library as its one allowed root and indexes
parts of it (the `json` package and the ~0.75 MB `pydoc_data/topics.py`, a context bomb) into a
temporary store through its own `ingest` tool. The client then lists the tools, runs a search
that the budget truncates, continues it with the `cursor` its notice gives, and reads a
budgeted page of the bomb. Each answer is one text block (what every client's model reads);
the page's fields for programs are in `_meta["ragbudget"]`.

    uv run --all-packages python examples/mcp_demo.py
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import sys
import sysconfig
import tempfile
from pathlib import Path
from typing import Any

from fastmcp import Client
from fastmcp.client.transports import StdioTransport
from ragbudget import get_counter, use_bundled_tiktoken_files

STDLIB = Path(sysconfig.get_paths()["stdlib"])
QUERY = "how are comparison operators chained"
CUT = "(cut to fit)"


def _offline_tiktoken() -> str | None:
    """Point tiktoken at the BPE files llama-index-core ships, when present (no network)."""
    return "tiktoken:cl100k_base" if use_bundled_tiktoken_files() else None


def _serve_command() -> list[str]:
    """`ragbudget serve` from this environment (the module form before the CLI is installed)."""
    script = Path(sys.executable).with_name("ragbudget")
    if script.exists() and importlib.util.find_spec("ragbudget_server.cli") is not None:
        return [str(script), "serve"]
    return [sys.executable, "-m", "ragbudget_server.mcp", "serve"]


def _texts(result: Any) -> list[str]:
    return [block.text for block in result.content if getattr(block, "type", None) == "text"]


def _show(title: str, result: Any, counter: Any, budget: int) -> dict[str, Any]:
    texts = _texts(result)
    tokens = sum(counter.count(text) for text in texts)
    data: dict[str, Any] = (result.meta or {}).get("ragbudget", {})
    print(f"\n--- {title}: {tokens:,} of {budget:,} tokens in the text the model reads")
    for text in texts:
        print(text if len(text) <= 500 else f"{text[:500]}... [{len(text):,} chars in all]")
    if any(r.get("cut") for r in data.get("results") or ()):
        print(f"why {CUT}: the {budget:,}-token budget could not hold these results whole, so each "
              f"one marked {CUT} shows part of its text, the lines that best match the query (the "
              "whole text stays in the store: read_document shows it; the notice names the first "
              "cut one)")  # fmt: skip
    notice = texts[-1].rsplit("\n\n", 1)[-1] if texts else ""
    if notice.startswith("["):  # the store's notice ends the text
        print("notice:", notice)
    return data


async def _drive(client: Client[Any], counter: Any, warnings: list[str]) -> int:
    print("\ntools:")
    for tool in await client.list_tools():
        read_only = tool.annotations.read_only_hint if tool.annotations else None
        summary = (tool.description or "").splitlines()[0]
        print(f"  {tool.name:<14} read-only={read_only!s:<5}  {summary}")

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        if total and (done == total or int(done) % 3 == 0):
            print(f"  ingest progress {int(done)}/{int(total)} {Path(message or '').name}")

    paths = ["json", "pydoc_data/topics.py"]  # relative to the allowed root: the stdlib
    report = await client.call_tool("ingest", {"paths": paths}, progress_handler=on_progress)
    print("ingest:", _texts(report)[0])  # the report's JSON

    budget = 2000
    search = {"query": QUERY, "limit": 20, "max_tokens": budget}
    first = _show("search", await client.call_tool_mcp("search", search), counter, budget)
    print("server log warning:", warnings[-1] if warnings else "(none)")
    cursor = first.get("next_cursor")
    if not first.get("truncated") or cursor is None:
        print("the search was not truncated: nothing to continue")
        return 1
    more = await client.call_tool_mcp("search", {**search, "cursor": cursor})
    _show(f'search continued with cursor="{cursor}" (the notice\'s)', more, counter, budget)

    page_budget = 800
    read = {"source": "pydoc_data/topics.py", "offset": 1, "max_tokens": page_budget}
    page = await client.call_tool_mcp("read_document", read)
    data = _show("read_document, first page of the context bomb", page, counter, page_budget)
    lines, following = data.get("total_lines", 0), data.get("next_offset")
    print(f"\n{lines:,} lines in all: read_document(offset={following}) gives the next page")
    return 0


async def main() -> int:
    spec = _offline_tiktoken()
    counter = get_counter(spec)
    with tempfile.TemporaryDirectory(prefix="ragbudget-mcp-demo-") as tmp:
        args = ["--db", str(Path(tmp) / "db"), "--allow-root", str(STDLIB)]
        if spec:
            args += ["--counter", spec]
        command = _serve_command()
        print("`pip install ragbudget-server` gives the `ragbudget` command; the client runs:")
        print("$", Path(command[0]).name, *command[1:], *args)
        log = Path(tmp) / "server-stderr.log"
        transport = StdioTransport(
            command=command[0],
            args=[*command[1:], *args],
            env=dict(os.environ),
            keep_alive=False,
            log_file=log,
        )
        warnings: list[str] = []

        async def on_log(message: Any) -> None:
            data = message.data
            warnings.append(str(data.get("msg", data) if isinstance(data, dict) else data))

        try:
            async with Client(transport, log_handler=on_log) as client:
                return await _drive(client, counter, warnings)
        except Exception:
            print("the server failed; its stderr:\n" + log.read_text(errors="replace"))
            raise


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
