"""What a search costs next to a raw Chroma query, by limit and budget, on stores of two sizes.

Side by side in one run (each query timed both ways, one after the other, so load on the
machine hits both alike; medians over the queries): `DocumentStore.search(q, limit=L,
max_tokens=B)` (the default: evidence selection; and `evidence=False`, the plain ranked prefix)
against the raw Chroma query a caller would make instead, `collection.query(query_embeddings=
[the store's embedding of q], n_results=L)` (texts, metadata and distances of the top L), on the
same collection. Each search is a first page: the ranking kept by the last search of the same
query is forgotten before it (outside the timing), so every search ranks afresh.

Goal (issue 42): the default search at most 1.5x the raw query at limits 10 and 50, at most 2x
at limit 200, at every budget; its cost growing with the limit no faster than Chroma's.

Stores: ~2K chunks (stdlib packages) and ~30K chunks (the whole stdlib, tests included, less
idlelib, tkinter, turtledemo, lib2to3), built with the default embedding ("hashing") and
counter; a 60K store takes too long to build on two shared cores. `--sizes JSON`: a store of
long JSON and logs (botocore's service models, the largest 24 that the interpreter's
botocore ships, and 8 generated application logs of 6,000 lines each), with queries of its own.
Building the large one takes minutes (7 on two loaded cores):
`--keep DIR` builds each store once in DIR and reuses it. `--dump FILE` writes what every
search returned (ids, texts' hashes, tokens, notices) as JSON, to compare two versions.

`--stages`: the default search's own stages timed beside the raw query, each as a multiple of
it (mean ms over the queries and rounds over the raw query's median): the ranking (Chroma's
`POOL` nearest ids for the hybrid fusion, the lexical index, the fused records), the records'
fetch, the duplicate finding and the evidence selection's tries; what is left is rendering,
measuring, the cursor's snapshot and the models. It shows the floor under the goal: the first
three need no budget work at all.

A bare run does all three (timing, `--stages`, `--work`) on each store and saves them for the
docs (`benchmarks/results/bench_search_cost.json`); `--stages` or `--work` alone only prints.

`--work`: the work each default search gives the tokenizer (bpe-openai's
calls and the characters in them, a call that stops at a limit taken as 8 characters a token
of it, medians over the queries) and the selections a page ran: figures the machine's load does
not change, to compare two versions of the code.

Run: make bench (or uv run --all-packages python benchmarks/bench_search_cost.py
[--quick] [--keep DIR] [--counter SPEC ...] [--dump FILE] [--work] [--stages])
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import logging
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

sys.path.insert(0, str(Path(__file__).parent))
from _corpus import QUERIES, STDLIB, offline_tiktoken
from ragbudget_server.store import DocumentStore
from ragbudget_server.store.cursor import FolderShelf, shelf_for

SMALL = ("json", "email", "asyncio", "logging", "http", "xml", "importlib", "unittest",
         "multiprocessing", "concurrent", "urllib")  # fmt: skip
LIMITS = (10, 50, 200)
BUDGETS = (1000, 4000, 14500)
GOAL = {10: 1.5, 50: 1.5, 200: 2.0}


JSON_QUERIES = [
    "list the objects in a bucket",
    "request throttled: rate exceeded error",
    "timeout connecting to the database",
    "create a snapshot of a volume",
    "payment declined for order",
    "pagination token for the next page",
    "access denied for the role",
    "retry the failed upload",
    "worker crashed with out of memory",
    "tag a resource with a key and value",
]
"""Questions over the JSON store's service models and logs."""


def _queries(size: str) -> list[str]:
    return JSON_QUERIES if size == "JSON" else QUERIES


def _json_corpus(where: Path) -> list[Path]:
    """Long JSON (botocore's largest service models, as shipped) and generated logs, in
    `where`, written once."""
    import gzip
    import random

    where.mkdir(parents=True, exist_ok=True)
    if not any(where.iterdir()):
        data = STDLIB / "site-packages" / "botocore" / "data"  # the interpreter's own botocore
        models = sorted(data.glob("*/*/service-2.json*"),
                        key=lambda m: (-m.stat().st_size, str(m)))[:24]  # fmt: skip
        if not models:
            msg = f"the JSON store needs botocore's service models in {data}: pip install botocore"
            raise SystemExit(msg)
        for model in models:
            raw = model.read_bytes()
            text = gzip.decompress(raw) if model.suffix == ".gz" else raw
            (where / f"{model.parent.parent.name}.json").write_bytes(text)
        rng = random.Random(51)
        words = ("order", "payment", "declined", "upload", "retry", "timeout", "database",
                 "worker", "memory", "session", "token", "cache", "queue", "denied")  # fmt: skip
        levels = ("INFO", "INFO", "INFO", "DEBUG", "WARNING", "ERROR")
        for n in range(8):
            lines = []
            for i in range(6000):
                picked = " ".join(rng.choice(words) for _ in range(rng.randint(3, 9)))
                when = f"2026-11-{1 + i % 28:02d}T{i % 24:02d}:{i % 60:02d}:{i * 7 % 60:02d}Z"
                lines.append(f"{when} "
                             f"{rng.choice(levels)} app.service{n} req={rng.getrandbits(48):012x} "
                             f"{picked} latency_ms={rng.randint(1, 5000)}")  # fmt: skip
            (where / f"service{n}.log").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return sorted(where.iterdir())


def _roots(size: str, where: Path) -> list[Path]:
    if size == "JSON":
        return _json_corpus(where / "corpus-JSON")
    if size == "2K":
        return [STDLIB / p for p in SMALL]
    skip = {"site-packages", "__pycache__", "idlelib", "tkinter", "turtledemo", "lib2to3"}
    return sorted(
        p for p in STDLIB.iterdir()
        if p.name not in skip and (p.is_dir() or p.suffix == ".py")
    )  # fmt: skip


def _store(size: str, where: Path) -> DocumentStore:
    db = where / f"store-{size}"
    fresh = not (db / "chroma.sqlite3").exists()
    store = DocumentStore(path=db)
    if fresh:
        start = time.perf_counter()
        report = store.ingest(_roots(size, where))
        print(f"built the {size} store: {report.chunks_added:,} chunks in "
              f"{time.perf_counter() - start:.0f} s", flush=True)  # fmt: skip
    return store


def _forget_rankings(store: DocumentStore) -> None:
    shelf = shelf_for(store._backend)
    if isinstance(shelf, FolderShelf):
        shutil.rmtree(shelf.folder, ignore_errors=True)


def _fingerprint(response: Any) -> dict[str, Any]:
    return {
        "ids": [r.id for r in response.results],
        "texts": [hashlib.sha256(r.text.encode()).hexdigest()[:16] for r in response.results],
        "tokens": [r.tokens for r in response.results],
        "merged": [r.merged_ids for r in response.results],
        "duplicates": [r.duplicate_ids for r in response.results],
        "cut": [r.cut for r in response.results],
        "next_offset": response.next_offset,
        "used_tokens": response.used_tokens,
        "notice": response.notice,
    }


def _timed(
    store: DocumentStore, limit: int, budget: int, rounds: int, queries: list[str],
    counter: str | None = None, evidence: bool = True, dump: dict[str, Any] | None = None,
) -> tuple[list[float], list[float]]:  # fmt: skip
    """Seconds of the raw query and of the search, each query timed both ways one after the
    other (which goes first alternates), every search a first page; `dump` keeps what each
    search returned."""
    raw_t: list[float] = []
    search_t: list[float] = []
    for r in range(rounds):
        for i, q in enumerate(queries):
            _forget_rankings(store)
            order = (i + r) % 2
            for turn in (order, 1 - order):
                t0 = time.perf_counter()
                if turn == 0:
                    vector = [float(x) for x in store._backend.embed([q], query=True)[0]]
                    store.collection.query(query_embeddings=[vector], n_results=limit)
                    raw_t.append(time.perf_counter() - t0)
                else:
                    response = store.search(
                        q, limit=limit, max_tokens=budget, counter=counter, evidence=evidence
                    )
                    search_t.append(time.perf_counter() - t0)
                    if dump is not None:
                        dump[f"{counter}|{evidence}|{limit}|{budget}|{q}"] = _fingerprint(response)
    return raw_t, search_t


def _measure(
    store: DocumentStore, counter: str | None, evidence: bool, limit: int, budget: int,
    rounds: int, dump: dict[str, Any], queries: list[str],
) -> tuple[float, float]:  # fmt: skip
    """Median ms of the raw query and of the search, over queries (and rounds)."""
    raw_t, search_t = _timed(store, limit, budget, rounds, queries, counter, evidence, dump)
    return statistics.median(raw_t) * 1e3, statistics.median(search_t) * 1e3


@contextlib.contextmanager
def _patched(*replacements: tuple[Any, str, Any]) -> Iterator[None]:
    """Each `(owner, name, value)` set for the block, the originals back after it."""
    with contextlib.ExitStack() as stack:
        for owner, name, value in replacements:
            stack.enter_context(mock.patch.object(owner, name, value))
        yield


def _stages(store: DocumentStore, rounds: int, queries: list[str]) -> list[dict[str, Any]]:
    """Print each stage of the default search as a multiple of the raw query (`--stages`), and
    return the rows."""
    from ragbudget_server.store import paging, selection

    spent: dict[str, float] = {}
    stages = (
        (paging, "ranking_for", "rank"),
        (paging, "fetch_ranked", "fetch"),
        (selection, "_distinct", "dedupe"),
        (selection, "select", "select"),
    )

    def timed(f: Any, label: str) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return f(*args, **kwargs)
            finally:
                spent[label] = spent.get(label, 0.0) + time.perf_counter() - t0

        return call

    labels = [label for _, _, label in stages]
    rows: list[dict[str, Any]] = []
    print(f"{'limit':>5} {'budget':>6} {'raw ms':>7} {'search':>7} "
          + " ".join(f"{x:>7}" for x in [*labels, "rest"]) + "  (x the raw query)")  # fmt: skip
    with _patched(*((o, n, timed(getattr(o, n), label)) for o, n, label in stages)):
        for budget in BUDGETS:
            for limit in LIMITS:
                spent.clear()
                raw_t, search_t = _timed(store, limit, budget, rounds, queries)
                raw = statistics.median(raw_t)
                n = len(search_t)
                parts = [spent.get(label, 0.0) / n / raw for label in labels]
                rest = statistics.mean(search_t) / raw - sum(parts)
                rows.append({"limit": limit, "budget": budget, "raw_ms": round(raw * 1e3, 2),
                             "search": round(statistics.median(search_t) / raw, 2),
                             **{k: round(x, 2) for k, x in zip(labels, parts, strict=True)},
                             "rest": round(rest, 2)})  # fmt: skip
                print(f"{limit:>5} {budget:>6} {raw * 1e3:>7.1f} "
                      f"{statistics.median(search_t) / raw:>6.2f}x "
                      + " ".join(f"{x:>6.2f}x" for x in [*parts, rest]), flush=True)  # fmt: skip
    return rows


def _work(store: DocumentStore, queries: list[str]) -> list[dict[str, Any]]:
    """Print what each default search (evidence, the store's counter) gives the tokenizer, and
    return the rows."""
    from ragbudget import bpe
    from ragbudget_server.store import selection

    tally = {"calls": 0, "chars": 0, "selects": 0}
    count, up_to, select = bpe.BpeCounter.count, bpe.BpeCounter.count_up_to, selection.select

    def counted(self: Any, text: str) -> int:
        tally["calls"] += 1
        tally["chars"] += len(text)
        return count(self, text)

    def counted_up_to(self: Any, text: str, limit: int) -> int:
        tally["calls"] += 1
        tally["chars"] += min(len(text), 8 * limit)
        return up_to(self, text, limit)

    def selecting(*args: Any, **kwargs: Any) -> Any:
        tally["selects"] += 1
        return select(*args, **kwargs)

    passes = len(getattr(store.counter, "counters", (store.counter,)))  # exact: two encodings
    print(f"{'limit':>5} {'budget':>6} {'calls':>6} {'K chars':>8} {'K shown':>7} {'ratio':>6} "
          f"{'selects':>7}  (a search; ratio: characters counted per character shown, "
          f"per encoding ({passes}))")  # fmt: skip
    rows: list[dict[str, Any]] = []
    with _patched(
        (bpe.BpeCounter, "count", counted),
        (bpe.BpeCounter, "count_up_to", counted_up_to),
        (selection, "select", selecting),
    ):
        for budget in BUDGETS:
            for limit in LIMITS:
                seen: dict[str, list[int]] = {k: [] for k in tally}
                shown: list[int] = []
                ratios: list[float] = []
                for q in queries:
                    _forget_rankings(store)
                    tally.update(dict.fromkeys(tally, 0))
                    answer = store.search(q, limit=limit, max_tokens=budget).to_text()
                    for k, v in tally.items():
                        seen[k].append(v)
                    shown.append(len(answer))
                    ratios.append(tally["chars"] / passes / max(len(answer), 1))
                calls, chars, selects = (statistics.median(seen[k]) for k in tally)
                rows.append({"limit": limit, "budget": budget, "chars": chars,
                             "shown": statistics.median(shown), "passes": passes,
                             "ratio": round(statistics.median(ratios), 2),
                             "selects": selects})  # fmt: skip
                print(f"{limit:>5} {budget:>6} {calls:>6.0f} {chars / 1e3:>8.0f} "
                      f"{statistics.median(shown) / 1e3:>7.1f} {statistics.median(ratios):>5.1f}x "
                      f"{selects:>7.1f}", flush=True)  # fmt: skip
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="the 2K store only, one round")
    parser.add_argument("--keep", type=Path, help="build the stores once in this folder")
    parser.add_argument("--counter", action="append", help="counter specs (default: the store's "
                        "and bpe:o200k_base)")  # fmt: skip
    parser.add_argument("--sizes", default=None, help="2K,30K,JSON (the default)")
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--dump", type=Path, help="write what every search returned here")
    parser.add_argument("--work", action="store_true", help="only the tokenizer's work")
    parser.add_argument("--stages", action="store_true", help="only the search's stages")
    args, _ = parser.parse_known_args()
    offline_tiktoken()
    logging.getLogger("ragbudget").setLevel(logging.ERROR)
    logging.getLogger("ragbudget_server").setLevel(logging.ERROR)
    sizes = (args.sizes or ("2K" if args.quick else "2K,30K,JSON")).split(",")
    rounds = args.rounds or (1 if args.quick else 2)
    counters: list[str | None] = [None, *(args.counter or ["bpe:o200k_base"])]
    parts = {"stages"} if args.stages else {"work"} if args.work else {"time", "stages", "work"}
    dump: dict[str, Any] = {}
    saved: dict[str, list[dict[str, Any]]] = {part: [] for part in parts}
    with tempfile.TemporaryDirectory(prefix="ragbudget-bench-") as tmp:
        where = args.keep or Path(tmp)
        where.mkdir(parents=True, exist_ok=True)
        for size in sizes:
            store = _store(size, where)
            chunks = store.collection.count()
            queries = _queries(size)
            about = {"store": size, "chunks": chunks}
            for q in queries:  # warm both paths (caches, counters' data, the HNSW index)
                for counter in counters:
                    store.search(q, limit=50, max_tokens=4000, counter=counter)
                store.collection.query(query_texts=[q], n_results=50)
            if "time" in parts:
                print(f"\nsearch vs raw collection.query, {chunks:,} chunks ({size} store), "
                      f"{len(queries)} queries x {rounds} rounds, medians, ms")  # fmt: skip
                print(f"{'counter':>16} {'mode':>8} {'limit':>5} {'budget':>6} {'raw':>7} "
                      f"{'search':>7} {'ratio':>6} {'goal':>5}")  # fmt: skip
                for counter in counters:
                    name = counter or f"{store.counter.name}"
                    for evidence in (True, False):
                        for budget in BUDGETS:
                            for limit in LIMITS:
                                raw, search = _measure(
                                    store, counter, evidence, limit, budget, rounds,
                                    dump.setdefault(size, {}), queries,
                                )  # fmt: skip
                                mode = "evidence" if evidence else "plain"
                                goal = f"{GOAL[limit]:.1f}x" if evidence else ""
                                print(f"{name[:16]:>16} {mode:>8} {limit:>5} {budget:>6} "
                                      f"{raw:>7.1f} {search:>7.1f} {search / raw:>5.2f}x "
                                      f"{goal:>5}", flush=True)  # fmt: skip
                                saved["time"].append({
                                    **about, "counter": name, "mode": mode, "limit": limit,
                                    "budget": budget, "raw_ms": round(raw, 2),
                                    "search_ms": round(search, 2),
                                })  # fmt: skip
            if "stages" in parts:
                print(f"\nthe default search's stages, {chunks:,} chunks ({size} store), "
                      f"{len(queries)} queries x {rounds} rounds")  # fmt: skip
                saved["stages"] += [{**about, **row} for row in _stages(store, rounds, queries)]
            if "work" in parts:
                print(f"\nthe tokenizer's work, {chunks:,} chunks ({size} store), medians of "
                      f"{len(queries)} queries, counter {store.counter.name}")  # fmt: skip
                saved["work"] += [{**about, **row} for row in _work(store, queries)]
            store.close()
    if args.dump:
        args.dump.write_text(json.dumps(dump, indent=1, sort_keys=True))
    if parts == {"time", "stages", "work"}:  # the whole run: the docs' three tables
        from doc_figures import save

        save(__file__, {"rounds": rounds, "queries": len(QUERIES), **saved})


def _ratio(row: dict[str, Any]) -> float:
    return float(row["search_ms"]) / float(row["raw_ms"])


def _span(values: list[float]) -> str:
    return f"{min(values):.1f}-{max(values):.1f}x" if len(values) > 1 else f"{values[0]:.1f}x"


def table(results: dict[str, Any]) -> str:
    """docs/store.md: a search against the raw query, by store, counter, mode and limit (the
    range over the budgets), and the goal."""
    from doc_figures import grid

    rows = results["time"]
    stores = list(dict.fromkeys((r["store"], r["chunks"]) for r in rows))
    keys = list(dict.fromkeys((r["counter"], r["mode"]) for r in rows))
    lines = []
    for store, chunks in stores:
        for counter, mode in keys:
            cells = []
            for limit in LIMITS:
                ratios = [_ratio(r) for r in rows if (r["store"], r["counter"], r["mode"],
                          r["limit"]) == (store, counter, mode, limit)]  # fmt: skip
                cells.append(_span(ratios) if ratios else "")
            label = "default (evidence)" if mode == "evidence" else "plain (`evidence=False`)"
            lines.append([f"{store}, {chunks:,} chunks", f"`{counter}`", label, *cells])
    head = ["store", "counter", "search", *(f"limit {n}" for n in LIMITS)]
    goal = ", ".join(f"{GOAL[n]:.0f}x" if GOAL[n] == int(GOAL[n]) else f"{GOAL[n]}x"
                     for n in LIMITS)  # fmt: skip
    budgets = " / ".join(f"{b:,}" for b in BUDGETS)
    return (
        f"A first page's time over the raw `collection.query` of the same embedding (k = limit),"
        f" the range over budgets of {budgets} tokens, medians of {results['queries']} queries x"
        f" {results['rounds']} rounds (issue 51's goal for the default search at limits "
        f"{', '.join(map(str, LIMITS))}: 2x each; issue 42's: {goal}):\n\n"
        + grid(head, lines, "lllrrr")
        + "\n"
    )


def table_stages(results: dict[str, Any]) -> str:
    """docs/store.md: where the default search's time goes, each stage over the raw query."""
    from doc_figures import grid

    lines = []
    for r in results["stages"]:
        floor = r["rank"] + r["fetch"] + r["dedupe"]
        lines.append([f"{r['store']}, {r['chunks']:,}", r["limit"], f"{r['budget']:,}",
                      f"{r['raw_ms']:.1f} ms", f"{r['search']:.2f}x", f"{r['rank']:.2f}x",
                      f"{r['fetch']:.2f}x", f"{r['dedupe']:.2f}x", f"**{floor:.2f}x**",
                      f"{r['select']:.2f}x", f"{r['rest']:.2f}x"])  # fmt: skip
    head = ["store", "limit", "budget", "raw query", "search", "ranking", "fetch", "duplicates",
            "before any budget work", "selection", "rest"]  # fmt: skip
    return (
        "Each stage of the default search as a multiple of the raw query (mean time a search "
        "over the raw query's median): the ranking (Chroma's 50 nearest ids for the hybrid "
        "fusion whatever the limit, the lexical index, the fused records), the records' fetch, "
        "finding duplicates (word shingles of every hit), their sum, then the evidence "
        "selection's tries and the rest (rendering, the answer's count, the cursor):\n\n"
        + grid(head, lines, "lrrrrrrrrrr")
        + "\n"
    )


def table_work(results: dict[str, Any]) -> str:
    """docs/store.md: the characters a default search gives the tokenizer per character shown."""
    from doc_figures import grid

    lines = [[f"{r['store']}, {r['chunks']:,}", r["limit"], f"{r['budget']:,}",
              f"{r['shown'] / 1e3:.1f} K", f"{r['chars'] / 1e3:,.0f} K", f"{r['ratio']:.1f}x",
              f"{r['selects']:.1f}"] for r in results["work"]]  # fmt: skip
    head = ["store", "limit", "budget", "characters shown", "counted", "per character shown",
            "selections"]  # fmt: skip
    passes = results["work"][0]["passes"] if results["work"] else 1
    return (
        "The tokenizer's work in a default search (medians of the queries; a count that stops "
        "at a limit taken as 8 characters a token of it), counted per character shown and per "
        f"encoding ({passes}: `exact` counts each text in both), against issue 51's goal of "
        "2x:\n\n" + grid(head, lines, "lrrrrrr") + "\n"
    )


if __name__ == "__main__":
    main()
