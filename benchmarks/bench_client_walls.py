"""The largest answer `ragbudget serve` gives each client profile, whatever it is asked.

On a store built as a new user builds it (default estimate counter, offline embedding) over
`pydoc_data/topics.py` and `json`, through fastmcp's in-memory client sending each profile's
`clientInfo.name`: `search` (limit 200) and `read_document` at max_tokens up to 1,000,000, in
both formats. For each profile, the largest whole answer (its text blocks, plus the
structured content as compact JSON if there were any: what a client may show a model) in
characters, UTF-8 bytes and exact o200k tokens, against the profile's walls.

    uv run --all-packages python benchmarks/bench_client_walls.py
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
import sysconfig
import tempfile
from pathlib import Path
from typing import Any

from fastmcp import Client
from mcp_types import Implementation, TextContent
from ragbudget import get_counter, use_bundled_tiktoken_files
from ragbudget.limits import DEFAULT_PROFILE, PROFILES
from ragbudget_server.mcp import ServerSettings, create_server
from ragbudget_server.store import DocumentStore

sys.path.insert(0, str(Path(__file__).parent))
import doc_figures

STDLIB = Path(sysconfig.get_paths()["stdlib"])
BUDGETS = [8192, 30_000, 1_000_000]


def _whole(result: Any) -> str:
    """What a client may show its model: the text blocks, and the structured content as
    compact JSON when there is any (the server sends none)."""
    texts = [b.text for b in result.content if isinstance(b, TextContent)]
    if result.structured_content is not None:
        texts.append(
            json.dumps(result.structured_content, ensure_ascii=False, separators=(",", ":"))
        )
    return "\n".join(texts)


async def _largest(db: Path, name: str, topics: str) -> tuple[int, int, int]:
    o200k = get_counter("tiktoken:o200k_base")
    sizes: list[tuple[int, int, int]] = []
    info = Implementation(name=name, version="bench")
    async with Client(create_server(ServerSettings(db=db)), client_info=info) as client:
        for budget in BUDGETS:
            for fmt in ("text", "json"):
                calls = [
                    ("search", {"query": "string literal escape sequences", "limit": 200}),
                    ("read_document", {"source": topics}),
                ]
                for tool, args in calls:
                    result = await client.call_tool_mcp(
                        tool, {**args, "max_tokens": budget, "format": fmt}
                    )
                    whole = _whole(result)
                    sizes.append((len(whole), len(whole.encode()), o200k.count(whole)))
    return max(sizes)


async def _measure(db: Path) -> list[dict[str, Any]]:
    topics = str(STDLIB / "pydoc_data" / "topics.py")
    rows = []
    print(f"{'profile':<15}{'walls':<47}{'chars':>8}{'bytes':>8}{'o200k':>8}")
    for profile in (*PROFILES, DEFAULT_PROFILE):
        chars, size, tokens = await _largest(db, profile.sends or "some-other-agent", topics)
        print(
            f"{profile.name:<15}{profile.walls().describe():<47}{chars:>8,}{size:>8,}{tokens:>8,}"
        )
        rows.append({"profile": profile.name, "walls": profile.walls().describe(),
                     "chars": chars, "bytes": size, "o200k": tokens})  # fmt: skip
    return rows


def main() -> None:
    use_bundled_tiktoken_files()
    logging.getLogger("fastmcp").setLevel(logging.ERROR)
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "db"
        store = DocumentStore(path=db)
        store.ingest([STDLIB / "pydoc_data" / "topics.py", STDLIB / "json"])
        store.close()
        rows = asyncio.run(_measure(db))
    doc_figures.save(__file__, {"budgets": BUDGETS, "profiles": rows})


def table(results: dict[str, Any]) -> str:
    """docs/mcp.md's table: each profile's largest answer against its walls."""
    rows = [(r["profile"], r["walls"], f"{r['chars']:,}", f"{r['bytes']:,}", f"{r['o200k']:,}")
            for r in results["profiles"]]  # fmt: skip
    return doc_figures.grid(["profile", "walls", "chars", "bytes", "o200k"], rows, "llrrr")


if __name__ == "__main__":
    main()
