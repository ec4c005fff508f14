"""`make demo`: fit() on retrieved text, then budgeted search over a real codebase. Offline.

Part 1 runs `fit_stdlib.py` (fit() over standard-library files as retrieved chunks). Part 2
ingests part of the Python standard library (the `json`, `email` and `asyncio` packages) plus
one very large real file, `pydoc_data/topics.py` (~0.75 MB, ~190,000 tokens: a context bomb),
into an embedded Chroma store with the offline `hashing` embedding. Then:

1. ingests again (nothing changes: ids are stable),
2. a budgeted search: the response a model reads fits the budget, with a notice,
3. its continuation with `offset`,
4. a budget smaller than the top result: it is cut, never sent whole,
5. a `read` of the bomb in pages, each within its budget.

Part 3 runs the installed `ragbudget` command (`pip install ragbudget-server` gives it) on the
same store: `ragbudget --version`, then a `ragbudget search`.

    uv run --all-packages python examples/demo.py [--keep]   (--keep: store in .ragbudget-demo)
"""

from __future__ import annotations

import logging
import os
import runpy
import shlex
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path
from typing import Any

from ragbudget import TokenCounter, get_counter, use_bundled_tiktoken_files
from ragbudget_server.store import DocumentStore, SearchResponse

STDLIB = Path(sysconfig.get_paths()["stdlib"])
PACKAGES = ("json", "email", "asyncio")
BOMB = STDLIB / "pydoc_data" / "topics.py"
QUERY = "how are comparison operators chained"
INSTALL = "pip install ragbudget-server"
"""The one command that gives the `ragbudget` command (from a checkout: `uv pip install
./packages/core ./packages/guard ./packages/server`)."""


def why_cut(marker: str, budget: int) -> str:
    """The line under results marked cut: why, in plain words."""
    return (
        f"   {marker}: the {budget:,}-token budget could not hold these results whole, so each "
        f"one marked {marker} shows part of its text, the lines that best match the query (the "
        "whole text stays in the store: `read` shows it; the notice names the first cut one)"
    )


def _counter() -> TokenCounter:
    """An exact counter when tiktoken's files are here (llama-index-core ships them), else the
    estimate: the budget holds for whichever counter the store uses."""
    use_bundled_tiktoken_files()
    try:
        return get_counter("tiktoken:cl100k_base")
    except (ImportError, RuntimeError):
        return get_counter("estimate")


def _short(source: str) -> str:
    return Path(source).relative_to(STDLIB).as_posix() if source.startswith(str(STDLIB)) else source


def _show(
    title: str, response: SearchResponse, counter: TokenCounter, budget: int, offset: int = 0
) -> None:
    used = counter.count(response.to_text())
    print(f"\n== {title}")
    print(f"   rendered response: {used:,} of {budget:,} tokens ({counter.name})")
    for rank, r in enumerate(response.results, start=offset + 1):
        cut = "  CUT" if r.cut else ""
        print(f"   {rank:>3}. {_short(r.source)}:{r.start_line}-{r.end_line}  "
              f"score {r.score}  {r.tokens} tokens{cut}")  # fmt: skip
    if any(r.cut for r in response.results):
        print(why_cut("CUT", budget))
    print(f"   notice: {response.notice}")


def main(folder: Path, packages: tuple[str, ...] = PACKAGES) -> dict[str, Any]:
    counter = _counter()
    store = DocumentStore(path=folder, collection="demo", counter=counter)
    roots = [STDLIB / p for p in packages] + [BOMB]
    print(f"Ingesting the stdlib's {', '.join(packages)} and {_short(str(BOMB))} "
          f"({BOMB.stat().st_size / 1e6:.2f} MB) into {folder} ...")  # fmt: skip
    start = time.perf_counter()
    report = store.ingest(roots)
    took = time.perf_counter() - start
    print(f"   {report.files_ingested} files, {report.chunks_added:,} chunks in {took:.1f} s "
          f"({report.files_unchanged} unchanged)")  # fmt: skip
    for skipped in report.files_skipped:
        print(f"   skipped {_short(skipped.path)}: {skipped.reason}")
    again = store.ingest(roots)
    print(f"   again: {again.files_unchanged} unchanged, {again.chunks_added} chunks written")

    query = QUERY
    budget = 2000
    first = store.search(query, limit=20, max_tokens=budget)
    whole = store.search(query, limit=20, max_tokens=1_000_000)
    raw = sum(r.tokens or 0 for r in whole.results)
    print(f"\nQuery: {query!r}: the top 20 chunks hold {raw:,} tokens of text;"
          f" the budget is {budget:,} for the whole response.")  # fmt: skip
    _show("search, limit 20, max_tokens 2000", first, counter, budget)
    assert first.next_cursor is not None
    assert first.next_offset is not None
    second = store.search(query, limit=20, max_tokens=budget, cursor=first.next_cursor)
    _show(f'the same search, cursor="{first.next_cursor}" (the notice\'s continuation)', second,
          counter, budget, first.next_offset)  # fmt: skip

    tiny = store.search("asyncio event loop", limit=5, max_tokens=300)
    _show("a 300-token budget: the top result does not fit whole", tiny, counter, 300)
    print("   its text ends:", repr(tiny.results[0].text[-90:]))

    print(f"\n== read {_short(str(BOMB))} in pages of at most 1,500 tokens")
    offset: int | None = 1
    pages = []
    for _ in range(3):
        assert offset is not None
        page = store.read(str(BOMB), offset=offset, max_tokens=1500)
        pages.append(page)
        print(f"   lines {page.start_line}-{page.end_line} of {page.total_lines:,}: "
              f"{counter.count(page.to_text()):,} tokens; notice: {page.notice}")  # fmt: skip
        offset = page.next_offset
    stats = store.stats()
    print(f"\nStore: {stats.documents} documents, {stats.chunks:,} chunks, "
          f"embedding {stats.embedding}, counter {stats.counter}")  # fmt: skip
    store.close()
    return {"first": first, "second": second, "tiny": tiny, "pages": pages, "counter": counter}


def run_command(folder: Path, max_tokens: int = 600) -> list[subprocess.CompletedProcess[str]]:
    """Part 3: the installed `ragbudget` console script on the demo's store, as a user runs it."""
    script = Path(sys.executable).with_name("ragbudget")
    print(f"The `ragbudget` command installs in one command: {INSTALL}")
    if not script.exists():
        print(f"   (no `ragbudget` next to {sys.executable}: run `{INSTALL}` first)")
        return []
    runs = []
    env = {**os.environ, "ANONYMIZED_TELEMETRY": "False"}
    for args in (
        ["--version"],
        ["search", QUERY, "--db", str(folder), "--collection", "demo", "--limit", "5",
         "--max-tokens", str(max_tokens)],
    ):  # fmt: skip
        print(f"\n$ ragbudget {shlex.join(args)}")
        done = subprocess.run(
            [str(script), *args], capture_output=True, text=True, env=env, check=False
        )
        print(done.stdout.rstrip() or done.stderr.rstrip())
        if "(cut to fit)" in done.stdout:
            print(why_cut("(cut to fit)", max_tokens))
        runs.append(done)
    return runs


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    print("=== Part 1: fit() on retrieved chunks (examples/fit_stdlib.py)\n")
    runpy.run_path(str(Path(__file__).with_name("fit_stdlib.py")), run_name="__main__")
    print("\n=== Part 2: the document store (ingest, budgeted search, continuation, read)\n")
    with tempfile.TemporaryDirectory(prefix="ragbudget-demo-") as tmp:
        db = Path(".ragbudget-demo") if "--keep" in sys.argv else Path(tmp) / "db"
        main(db)
        print("\n=== Part 3: the `ragbudget` command on the same store\n")
        if any(done.returncode for done in run_command(db)):
            sys.exit(1)
