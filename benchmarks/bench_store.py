"""The document store: budgeted search against a raw Chroma query, and ingestion throughput.

Side by side in one run, on one store built from real code (parts of the Python standard
library): `DocumentStore.search(q, limit=50, max_tokens=4000)` against
`collection.query(query_texts=[q], n_results=50)` on the same collection. Goal: <= 1.15x.
The budgeted search embeds the query the same way and asks Chroma for ids and distances only,
then fetches texts and metadata for the ranked prefix the budget can reach (stored token counts
say how far), and counts its rendered response once (and a couple of small envelope strings);
chunk texts are not counted again, their token counts were stored at ingest.

Run: make bench (or uv run --all-packages python benchmarks/bench_store.py [--quick])
"""

from __future__ import annotations

import logging
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
import doc_figures
from _corpus import PACKAGES, QUERIES, QUICK, STDLIB, offline_tiktoken
from ragbudget import get_counter
from ragbudget_server.store import DocumentStore


def _median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1e3


def main() -> None:
    offline_tiktoken()
    logging.getLogger("ragbudget").setLevel(logging.ERROR)
    packages = QUICK if "--quick" in sys.argv else PACKAGES
    roots = [STDLIB / p for p in packages]
    with tempfile.TemporaryDirectory(prefix="ragbudget-bench-") as tmp:
        store = DocumentStore(path=Path(tmp) / "db")
        nbytes = sum(f.stat().st_size for r in roots for f in r.rglob("*.py"))
        start = time.perf_counter()
        report = store.ingest(roots)
        took = time.perf_counter() - start
        again = time.perf_counter()
        unchanged = store.ingest(roots)
        took_again = time.perf_counter() - again
        print(f"ingestion of the stdlib's {', '.join(packages)} ({nbytes / 1e6:.2f} MB of .py)")
        print(f"{'files':>8} {'chunks':>8} {'seconds':>9} {'chunks/s':>9} {'MB/s':>7}")
        print(
            f"{report.files_ingested:>8} {report.chunks_added:>8} {took:>9.2f} "
            f"{report.chunks_added / took:>9.1f} {nbytes / took / 1e6:>7.3f}"
        )
        print(
            f"re-ingest, nothing changed: {unchanged.files_unchanged} files unchanged, "
            f"{unchanged.chunks_added} chunks written, {took_again:.2f} s"
        )

        collection = store.collection
        for q in QUERIES:  # warm both paths (model, caches, the HNSW index in memory)
            store.search(q, limit=50, max_tokens=4000)
            collection.query(query_texts=[q], n_results=50)
        rounds = 5 if "--quick" in sys.argv else 15
        rows = []
        modes = [(c, e) for c in (None, "tiktoken:cl100k_base") for e in (False, True)]
        for counter, evidence in modes:
            tc = get_counter(counter) if counter else store.counter
            raw_t: list[float] = []
            budget_t: list[float] = []
            count_t: list[float] = []
            returned = []
            for _ in range(rounds):
                for q in QUERIES:  # interleaved, so load on the machine hits both alike
                    t0 = time.perf_counter()
                    collection.query(query_texts=[q], n_results=50)
                    t1 = time.perf_counter()
                    response = store.search(
                        q, limit=50, max_tokens=4000, counter=counter, evidence=evidence
                    )
                    t2 = time.perf_counter()
                    text = response.to_text()
                    t3 = time.perf_counter()
                    tc.count(text)  # the one count of the rendered response, on its own
                    count_t.append(time.perf_counter() - t3)
                    raw_t.append(t1 - t0)
                    budget_t.append(t2 - t1)
                    returned.append(len(response.results))
            rows.append(
                (counter or store.counter.name, evidence, _median_ms(raw_t),
                 _median_ms(budget_t), _median_ms(count_t), statistics.mean(returned))
            )  # fmt: skip
        print(f"\nsearch, limit 50, max_tokens 4000, {store.collection.count():,} chunks, "
              f"{len(QUERIES)} queries x {rounds} rounds (medians)")  # fmt: skip
        print(
            f"{'counter, selection':>44} {'raw query ms':>13} {'budgeted ms':>12} {'ratio':>7} "
            f"{'1 count ms':>11} {'kept':>6}"
        )
        for spec, evidence, raw, budget, count, kept in rows:
            name = (spec if spec != store.counter.name else f"{spec} (stored counts)") + (
                ", evidence" if evidence else ", plain"
            )
            print(
                f"{name:>44} {raw:>13.2f} {budget:>12.2f} {budget / raw:>6.2f}x "
                f"{count:>11.2f} {kept:>6.1f}"
            )
        print("'1 count ms': one count of the rendered response, the floor of the exact guarantee")
        print("goal: <= 1.15x with stored counts and the plain prefix; evidence (the default)")
        print("counts each candidate's rendering, and pays for it in time, not in tokens")
        results: dict[str, Any] = {
            "packages": list(packages), "chunks": store.collection.count(),
            "queries": len(QUERIES), "rounds": rounds, "store_counter": store.counter.name,
            "searches": [
                {"counter": spec, "evidence": evidence, "raw_ms": raw, "search_ms": budget,
                 "count_ms": count, "kept": kept}
                for spec, evidence, raw, budget, count, kept in rows
            ],
        }  # fmt: skip
        store.close()
    doc_figures.save(__file__, results)


def table(results: dict[str, Any]) -> str:
    """docs/store.md's table: a budgeted search against the raw Chroma query it replaces."""
    rows = []
    for r in results["searches"]:
        counter = r["counter"]
        if counter == results["store_counter"]:
            counter = f"`{counter}` (stored counts)"
        else:
            counter = f"`{counter}`"
        selection = "evidence (the default)" if r["evidence"] else "plain prefix (goal: 1.15x)"
        rows.append(
            (counter, selection, f"{r['raw_ms']:.2f} ms", f"{r['search_ms']:.2f} ms",
             f"{r['search_ms'] / r['raw_ms']:.2f}x", f"{r['count_ms']:.2f} ms", f"{r['kept']:.1f}")
        )  # fmt: skip
    head = ["counter", "selection", "raw query", "search", "ratio", "one count of the answer",
            "results kept"]  # fmt: skip
    return (
        f"`search(q, limit=50, max_tokens=4000)` against `collection.query(query_texts=[q], "
        f"n_results=50)`, {results['chunks']:,} chunks of the stdlib, medians of "
        f"{results['queries']} queries x {results['rounds']} rounds, interleaved:\n\n"
        + doc_figures.grid(head, rows, "llrrrrr")
    )


if __name__ == "__main__":
    main()
