"""What the default server sends for a file the estimate was never fitted on, asked for 25,000.

    python tools/estimator/pages.py            # print the table
    python tools/estimator/pages.py --docs     # also write it into docs/estimator.md

The files are those of `tests/server/mcp/test_estimate_server.py` (generated the same way, from the
same seeds): a store built at its defaults (the estimate counter, the offline embedding), then
one `read_document` per file at `max_tokens=25000` through fastmcp's in-memory client, each
page counted by tiktoken. The test checks that every page fits; this prints how full it is,
and what the same read sends from a store counted with `chars:4` (`len // 4`).
"""

from __future__ import annotations

import asyncio
import random
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT / "tests" / "server" / "mcp"))

import report  # noqa: E402
from fastmcp import Client  # noqa: E402
from ragbudget import get_counter, use_bundled_tiktoken_files  # noqa: E402
from ragbudget_server.mcp import ServerSettings, create_server  # noqa: E402
from ragbudget_server.store import DocumentStore  # noqa: E402
from test_estimate_server import FILES  # noqa: E402

DOCS = ROOT / "docs" / "estimator.md"
ASK = 25_000
COUNTERS = ("estimate", "chars:4")  # the default, and the old `len // 4`


async def _pages(db: Path, folder: Path) -> dict[str, tuple[str, int]]:
    """file name -> (the text the client got, the server's own count of it)."""
    out = {}
    async with Client(create_server(ServerSettings(db=db))) as client:
        for name in sorted(FILES):
            args = {"source": str(folder / name), "max_tokens": ASK}
            result = await client.call_tool_mcp("read_document", args)
            text = "\n".join(block.text for block in result.content)
            out[name] = (text, result.meta["ragbudget"]["text_tokens"])
    return out


def table() -> str:
    use_bundled_tiktoken_files()
    counters = [get_counter(f"tiktoken:{e}") for e in ("cl100k_base", "o200k_base")]
    pages = {}
    sizes = {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for name, make in FILES.items():
            text = make(random.Random(name))
            sizes[name] = len(text)
            (folder / name).write_text(text, encoding="utf-8")
        for counter in COUNTERS:
            db = folder / f"db-{counter}"
            store = DocumentStore(path=db, counter=counter)  # else the defaults
            store.ingest(sorted(folder / name for name in FILES))
            store.close()
            pages[counter] = asyncio.run(_pages(db, folder))
    rows = [
        "| file (generated) | characters | cl100k tokens | o200k tokens "
        "| the server's count (estimate + 10%) | with `chars:4`: cl100k tokens |",
        "|---|---|---|---|---|---|",
    ]
    for name, (text, own) in pages["estimate"].items():
        real = " | ".join(f"{c.count(text):,}" for c in counters)
        old = counters[0].count(pages["chars:4"][name][0])
        rows.append(f"| `{name}` | {sizes[name]:,} | {real} | {own:,} | {old:,} |")
    return (
        f"One page of each file at `max_tokens={ASK}` from the default server (clamped to its "
        "14,500-token ceiling), and from a server over a store counted with `chars:4` (the "
        "`len // 4` the project began with), measured by `python tools/estimator/pages.py`:"
        "\n\n" + "\n".join(rows)
    )


def main() -> int:
    return report.table_main(__doc__.splitlines()[0], table, DOCS, "pages-table")


if __name__ == "__main__":
    raise SystemExit(main())
