"""Hybrid search (vectors + the lexical index, fused) against vectors alone, side by side.

On one store built from parts of the Python standard library: the same searches with
`hybrid=True` (the default) and `hybrid=False`, interleaved query by query so that load on the
machine hits both alike, each a new search (its first page: the ranking is made, not read from
a cursor). Goal: hybrid adds at most 20% to a search's time. Also: what the lexical index costs
an ingest (a full build of it, timed apart, against the whole ingest) and on disk, and how often
the file that answers a question with a rare name ranks first with and without it.

Run: make bench (or uv run --all-packages python benchmarks/bench_hybrid.py [--quick])
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
from ragbudget_server.store import DocumentStore
from ragbudget_server.store.hybrid import index_for
from ragbudget_server.store.lexical import LexicalIndex

RARE_WORDS = {  # a question with a name or rare word, and the file that answers it
    "where is NLCRE_crack used": "email/feedparser.py",
    "what does py_scanstring return": "json/decoder.py",
    "BufferedSubFile push lines": "email/feedparser.py",
    "decode_rfc2231 charset language": "email/utils.py",
    "get_bare_quoted_string tokens": "email/_header_value_parser.py",
    "_splitparam semicolon": "email/message.py",
    "which encoder handles c_make_encoder being missing": "json/encoder.py",
    "body_line_iterator decode": "email/iterators.py",
    "what is _formatparam for": "email/message.py",
    "py_encode_basestring_ascii escapes": "json/encoder.py",
}


def _median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1e3


def main() -> None:
    offline_tiktoken()
    logging.getLogger("ragbudget").setLevel(logging.ERROR)
    quick = "--quick" in sys.argv
    roots = [STDLIB / p for p in (QUICK if quick else PACKAGES)]
    with tempfile.TemporaryDirectory(prefix="ragbudget-bench-") as tmp:
        store = DocumentStore(path=Path(tmp) / "db")
        start = time.perf_counter()
        report = store.ingest(roots)
        took = time.perf_counter() - start
        index = index_for(store._backend)
        rebuilt = LexicalIndex(Path(tmp) / "rebuilt.sqlite3")
        start = time.perf_counter()
        rebuilt.sync(store.collection, "bench")
        build = time.perf_counter() - start
        start = time.perf_counter()
        index.sync(store.collection, store._backend.version())  # in step: lists ids, diffs
        resync = time.perf_counter() - start
        size = index.path.stat().st_size
        chroma = sum(f.stat().st_size for f in (Path(tmp) / "db").rglob("*") if f.is_file())
        print(f"ingest: {report.chunks_added:,} chunks in {took:.2f} s; the lexical index built")
        print(f"from the collection alone: {build:.2f} s ({build / took:.0%} of the ingest)")
        print(f"an ingest that wrote adds, besides its chunks: {resync * 1e3:.0f} ms (ids listed)")
        print(
            f"lexical index on disk: {size / 1e6:.1f} MB (the whole store: {chroma / 1e6:.1f} MB)"
        )

        for q in QUERIES:  # warm both paths
            store.search(q, hybrid=True)
            store.search(q, hybrid=False)
        rounds = 3 if quick else 15
        print(f"\nsearch, first page, {store.collection.count():,} chunks, {len(QUERIES)} queries "
              f"x {rounds} rounds (medians, interleaved)")  # fmt: skip
        print(f"{'search':>34} {'dense ms':>9} {'hybrid ms':>10} {'ratio':>7} {'paired':>7}")
        results: dict[str, Any] = {
            "chunks": store.collection.count(), "ingest_s": took, "index_build_s": build,
            "resync_ms": resync * 1e3, "index_mb": size / 1e6, "store_mb": chroma / 1e6,
            "queries": len(QUERIES), "rounds": rounds, "searches": [],
        }  # fmt: skip
        settings = [("default (limit 10, 8,192 tokens)", {}),
                    ("limit 50, 4,000 tokens, plain", {"limit": 50, "max_tokens": 4000,
                                                       "evidence": False})]  # fmt: skip
        for label, kwargs in settings:
            dense_t: list[float] = []
            hybrid_t: list[float] = []
            for r in range(rounds):
                for n, q in enumerate(QUERIES):
                    query = f"{q} {r}"  # a new ranking each time: never read from a snapshot
                    order = (False, True) if (n + r) % 2 else (True, False)
                    for hybrid in order:
                        t0 = time.perf_counter()
                        store.search(query, hybrid=hybrid, **kwargs)  # type: ignore[arg-type]
                        (hybrid_t if hybrid else dense_t).append(time.perf_counter() - t0)
            dense, hybrid_ms = _median_ms(dense_t), _median_ms(hybrid_t)
            paired = statistics.median(h / d for h, d in zip(hybrid_t, dense_t, strict=True))
            print(f"{label:>34} {dense:>9.2f} {hybrid_ms:>10.2f} {hybrid_ms / dense:>6.2f}x "
                  f"{paired:>6.2f}x")  # fmt: skip
            results["searches"].append(
                {"search": label, "dense_ms": dense, "hybrid_ms": hybrid_ms, "paired": paired}
            )
        print("goal: hybrid <= 1.20x; 'paired': the median of each query's hybrid/dense ratio")

        firsts = {True: 0, False: 0}
        for query, want in RARE_WORDS.items():
            for hybrid in (True, False):
                ranked = store.candidates(query, limit=1, hybrid=hybrid)
                firsts[hybrid] += bool(ranked and ranked[0][1].endswith(want))
        n = len(RARE_WORDS)
        print(f"\nquestions with a rare name whose answering file ranks first: "
              f"hybrid {firsts[True]}/{n}, dense {firsts[False]}/{n}")  # fmt: skip
        store.close()
    results |= {"rare": n, "rare_first_hybrid": firsts[True], "rare_first_dense": firsts[False]}
    doc_figures.save(__file__, results)


def table(results: dict[str, Any]) -> str:
    """docs/store.md's table: what the lexical index costs a search, an ingest and the disk."""
    r = results
    rows = [
        (f"a new search's first page, {s['search']}",
         f"{s['dense_ms']:.2f} ms by vectors, {s['hybrid_ms']:.2f} ms hybrid: "
         f"{s['hybrid_ms'] / s['dense_ms']:.2f}x (median of the paired ratios "
         f"{s['paired']:.2f}x; goal: at most 1.20x)")
        for s in r["searches"]
    ]  # fmt: skip
    rows += [
        ("a page read by cursor", "no lexical work: the fused ranking is read from the snapshot"),
        ("building the index from the collection (a store's first ingest, or one built before "
         "the index)", f"{r['index_build_s']:.2f} s, {r['index_build_s'] / r['ingest_s']:.0%} of "
         f"the {r['ingest_s']:.1f} s ingest that wrote the chunks"),
        ("what any other ingest that wrote adds, besides its chunks' rows",
         f"{r['resync_ms']:.0f} ms (listing the collection's ids)"),
        ("the index on disk", f"{r['index_mb']:.1f} MB of the store's {r['store_mb']:.1f} MB"),
        (f"{r['rare']} questions naming a rare identifier, the file that answers ranked first",
         f"hybrid {r['rare_first_hybrid']}/{r['rare']}, vectors alone "
         f"{r['rare_first_dense']}/{r['rare']}"),
    ]  # fmt: skip
    return (
        f"{r['chunks']:,} chunks of the standard library; searches are medians of "
        f"{r['queries']} queries x {r['rounds']} rounds, the two ways interleaved.\n\n"
        + doc_figures.grid(["what", "figure"], rows)
    )


if __name__ == "__main__":
    main()
