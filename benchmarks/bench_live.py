"""A live store's cost: the per-call check for other processes' writes, and a reopen.

Side by side in one run, on one embedded store built from parts of the standard library:
`DocumentStore.search` as shipped (each call first checks whether another process wrote the
store: a `stat`, and a read-only SQLite query at most once a second while the file is
unchanged) against the same search with the check turned off; then the first search after
another process wrote (the client is reopened) against a search on a warm client.

Run: uv run --all-packages python benchmarks/bench_live.py [--quick]
"""

from __future__ import annotations

import logging
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _corpus import STDLIB
from ragbudget_server.store import DocumentStore

QUERIES = ["decode a JSON document", "parse an email header", "event loop", "MIME multipart"]


def _median_ms(store: DocumentStore, rounds: int) -> float:
    times = []
    for i in range(rounds):
        start = time.perf_counter()
        store.search(QUERIES[i % len(QUERIES)], limit=10, max_tokens=2000)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def main() -> None:
    logging.getLogger("ragbudget").setLevel(logging.ERROR)
    quick = "--quick" in sys.argv
    packages = ("json", "email") if quick else ("json", "email", "asyncio", "logging")
    rounds = 40 if quick else 200
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "db"
        with DocumentStore(path=db) as builder:
            builder.ingest([STDLIB / p for p in packages])
        store = DocumentStore(path=db)
        _median_ms(store, 5)  # warm up: load the index
        checked = _median_ms(store, rounds)
        watch, store._backend._watch = store._backend._watch, None
        unchecked = _median_ms(store, rounds)
        store._backend._watch = watch
        print(f"search, {len(packages)} packages, median of {rounds}:")
        print(f"  with the live check    {checked:7.2f} ms")
        print(f"  without it             {unchecked:7.2f} ms   ratio {checked / unchecked:.2f}x")

        reopen = []
        extra = Path(tmp) / "extra.py"
        for i in range(3 if quick else 8):
            extra.write_text(f"def added_{i}():\n    return {i}\n")
            code = (
                "from ragbudget_server.store import DocumentStore\n"
                f"DocumentStore(path={str(db)!r}).ingest([{str(extra)!r}])\n"
            )
            subprocess.run([sys.executable, "-c", code], check=True)
            start = time.perf_counter()
            store.search("added", limit=10, max_tokens=2000)
            reopen.append(time.perf_counter() - start)
        warm = _median_ms(store, 20)
        first = statistics.median(reopen) * 1000
        print("first search after another process wrote (the client reopens):")
        print(f"  after a write          {first:7.2f} ms")
        print(f"  warm client            {warm:7.2f} ms   ratio {first / warm:.1f}x")
        store.close()


if __name__ == "__main__":
    main()
