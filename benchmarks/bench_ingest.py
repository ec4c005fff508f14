"""Ingest throughput against Chroma's own `add`, and the cost of re-ingesting.

Side by side in one run, on copies of parts of the standard library: `DocumentStore.ingest`
of a fresh store (walk, read, chunk, count, embed, write) against `collection.add` of the very
records it wrote (the same ids, documents, metadata and precomputed embeddings, in the same
batches of 256) into a fresh collection; then a re-ingest of the unchanged tree, and one
after a one-line change to one file (both stat each file first: an unchanged file is not read).

With `--large`, then the same two re-ingests on a store of 60,000+ chunks: the whole standard
library and the sources of this environment's site-packages, in name order, up to LARGE_BYTES
(about 100,000 chunks here). Building it takes minutes (timed and printed; no Chroma
comparison); `--keep DIR` keeps the copied tree and the store in DIR, and a later run with the
same DIR reuses them and times only the re-ingests. The re-ingests print their CPU seconds
beside the wall-clock ones, and the load average: on a shared machine the CPU time is the
steadier figure.

Run: make bench (or uv run --all-packages python benchmarks/bench_ingest.py [--quick]
[--large [--keep DIR]])
"""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import statistics
import sys
import sysconfig
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
import doc_figures
from _corpus import STDLIB
from ragbudget_server.store import DocumentStore

SMALL = ("json", "email", "asyncio", "logging", "http", "xml", "importlib", "unittest")
LARGE = (*SMALL, "multiprocessing", "concurrent", "ctypes", "urllib", "tomllib", "sqlite3",
         "wsgiref", "zoneinfo", "pydoc_data", "lib2to3", "idlelib", "tkinter",
         "distutils")  # fmt: skip
BATCH = 256
LARGE_BYTES = 90_000_000
"""Text bytes (.py, .md, ...) of the `--large` tree: 100,292 chunks from this environment."""
SITE = Path(sysconfig.get_paths()["purelib"])
IGNORE = shutil.ignore_patterns(
    "__pycache__", "test", "tests", "site-packages", "dist-packages", "*.pyc", "*.so", "*.dll"
)
TEXT = (".py", ".pyi", ".md", ".rst", ".txt")


def _copy(tree: Path, packages: tuple[str, ...]) -> list[Path]:
    roots = []
    for name in packages:
        if (STDLIB / name).is_dir():  # copy2 keeps mtimes: the files look old, as real ones do
            shutil.copytree(
                STDLIB / name,
                tree / name,
                ignore=shutil.ignore_patterns("__pycache__", "test", "tests"),
            )
            roots.append(tree / name)
    return roots


def _chroma_add(where: Path, store: DocumentStore) -> float:
    """Seconds for Chroma's own add of the records the ingest wrote, in the same batches."""
    import chromadb
    from chromadb.config import Settings

    got = store.collection.get(include=["documents", "metadatas", "embeddings"])
    client = chromadb.PersistentClient(
        path=str(where), settings=Settings(anonymized_telemetry=False)
    )
    collection = client.create_collection(
        "raw-add", configuration={"hnsw": {"space": "cosine"}}, embedding_function=None
    )
    start = time.perf_counter()
    for i in range(0, len(got["ids"]), BATCH):
        collection.add(
            ids=got["ids"][i : i + BATCH],
            documents=got["documents"][i : i + BATCH],
            metadatas=got["metadatas"][i : i + BATCH],
            embeddings=got["embeddings"][i : i + BATCH],
        )
    return time.perf_counter() - start


def _run(packages: tuple[str, ...], tmp: Path, rep: int) -> tuple[int, float, float, float, float]:
    tree = tmp / f"tree-{rep}"
    roots = _copy(tree, packages)
    store = DocumentStore(path=tmp / f"db-{rep}")
    start = time.perf_counter()
    report = store.ingest(roots, batch_size=BATCH)
    ingest_s = time.perf_counter() - start
    add_s = _chroma_add(tmp / f"raw-{rep}", store)
    start = time.perf_counter()
    again = store.ingest(roots, batch_size=BATCH)
    unchanged_s = time.perf_counter() - start
    assert again.files_unchanged == again.files_seen - len(again.files_skipped)
    target = (
        roots[0] / "decoder.py"
        if (roots[0] / "decoder.py").exists()
        else next(roots[0].glob("*.py"))
    )
    with target.open("a", encoding="utf-8") as f:
        f.write("# one more line\n")
    start = time.perf_counter()
    changed = store.ingest(roots, batch_size=BATCH)
    changed_s = time.perf_counter() - start
    assert changed.files_ingested == 1
    store.close()
    return report.chunks_added, ingest_s, add_s, unchanged_s, changed_s


def _large_tree(tree: Path) -> list[Path]:
    """Copy the stdlib and then site-packages folders, in name order, up to LARGE_BYTES."""
    sources = [STDLIB, *sorted(p for p in SITE.iterdir() if p.is_dir() and "." not in p.name)]
    roots, total = [], 0
    for source in sources:
        if total >= LARGE_BYTES:
            break
        target = tree / ("stdlib" if source == STDLIB else source.name)
        shutil.copytree(source, target, ignore=IGNORE, symlinks=True)
        total += sum(f.stat().st_size for f in target.rglob("*") if f.suffix in TEXT)
        roots.append(target)
    return roots


def _large(keep: Path | None) -> dict[str, Any]:
    """Re-ingest an unchanged 60K+-chunk store, and one after a one-line change."""
    with tempfile.TemporaryDirectory(prefix="ragbudget-bench-large-") as tmp:
        where = keep or Path(tmp)
        where.mkdir(parents=True, exist_ok=True)
        tree, db = where / "tree", where / "db"
        built = tree.exists() and db.exists()
        if built:
            roots = sorted(p for p in tree.iterdir() if p.is_dir())
        else:
            shutil.rmtree(tree, ignore_errors=True)
            shutil.rmtree(db, ignore_errors=True)
            roots = _copy_large(tree)
        store = DocumentStore(path=db)
        start = time.perf_counter()
        report = store.ingest(roots, batch_size=BATCH)
        first_s = time.perf_counter() - start
        chunks = store.stats().chunks
        start, cpu = time.perf_counter(), time.process_time()
        again = store.ingest(roots, batch_size=BATCH)
        unchanged_s, unchanged_cpu = time.perf_counter() - start, time.process_time() - cpu
        assert again.chunks_added == again.chunks_deleted == 0
        target = tree / "stdlib" / "json" / "decoder.py"
        with target.open("a", encoding="utf-8") as f:
            f.write("# one more line\n")
        start, cpu = time.perf_counter(), time.process_time()
        changed = store.ingest(roots, batch_size=BATCH)
        changed_s, changed_cpu = time.perf_counter() - start, time.process_time() - cpu
        assert changed.files_ingested == 1
        store.close()
        what = "re-ingest" if built else "build"
        rate = f" ({report.chunks_added / first_s:,.0f} chunks/s)" if not built else ""
        print(f"\n60k store: {chunks:,} chunks from {again.files_seen:,} files; "
              f"{what} {first_s:.0f} s{rate}; again unchanged: {unchanged_s:.2f} s "
              f"({unchanged_cpu:.2f} s CPU); after a one-line change to one file: "
              f"{changed_s:.2f} s ({changed_cpu:.2f} s CPU); "
              f"load {os.getloadavg()[0]:.1f}")  # fmt: skip
        return {
            "chunks": chunks, "files": again.files_seen, "built": not built,
            "first_s": first_s, "unchanged_s": unchanged_s, "unchanged_cpu_s": unchanged_cpu,
            "changed_s": changed_s, "changed_cpu_s": changed_cpu,
        }  # fmt: skip


def _copy_large(tree: Path) -> list[Path]:
    start = time.perf_counter()
    roots = _large_tree(tree)
    print(f"copied {len(roots)} folders in {time.perf_counter() - start:.0f} s", flush=True)
    return roots


def main() -> None:
    logging.getLogger("ragbudget").setLevel(logging.ERROR)
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="the small tree only")
    parser.add_argument("--large", action="store_true", help="also a 60K+-chunk store")
    parser.add_argument(
        "--keep", type=Path, help="keep (and reuse) the --large tree and store here"
    )
    args = parser.parse_args()
    if args.keep is not None and not args.large:
        parser.error("--keep goes with --large")
    sizes = [("small", SMALL, 3)] + ([] if args.quick else [("large", LARGE, 1)])
    print(f"{'tree':>6} {'chunks':>7} {'ingest/s':>9} {'add/s':>8} {'ratio':>6} "
          f"{'again s':>8} {'1 line s':>9} {'repeats':>8}")  # fmt: skip
    results: dict[str, Any] = {"trees": []}
    for label, packages, repeats in sizes:
        rows = []
        with tempfile.TemporaryDirectory(prefix="ragbudget-bench-ingest-") as tmp:
            for rep in range(repeats):
                rows.append(_run(packages, Path(tmp), rep))
        chunks = rows[0][0]
        ingest = statistics.median(r[1] for r in rows)
        add = statistics.median(r[2] for r in rows)
        ratio = statistics.median(r[2] / r[1] for r in rows)
        again = statistics.median(r[3] for r in rows)
        line = statistics.median(r[4] for r in rows)
        print(f"{label:>6} {chunks:>7,} {chunks / ingest:>9.0f} {chunks / add:>8.0f} "
              f"{ratio:>5.2f}x {again:>8.2f} {line:>9.2f} {repeats:>8}", flush=True)  # fmt: skip
        results["trees"].append(
            {"packages": list(packages), "chunks": chunks, "repeats": repeats,
             "ingest_per_s": chunks / ingest, "add_per_s": chunks / add, "ratio": ratio,
             "unchanged_s": again, "changed_s": line}
        )  # fmt: skip
    print("ratio: ingest chunks/s over Chroma's own add of the same records (goal >= 0.8x)")
    if args.large:
        results["large"] = _large(args.keep)
    doc_figures.save(__file__, results)


def table(results: dict[str, Any]) -> str:
    """docs/store.md's ingest table: a fresh ingest against Chroma's add, then re-ingests."""
    head = ["tree (tests left out)", "chunks", "ingest, chunks/s",
            "Chroma's own `add` of the same records, chunks/s", "ratio (goal: 0.8x)",
            "again, unchanged", "after a one-line change"]  # fmt: skip
    rows: list[tuple[str, ...]] = []
    first = results["trees"][0]["packages"]
    for tree in results["trees"]:
        more = len(tree["packages"]) - len(first)
        packages = f"the same and {more} more" if more else ", ".join(first)
        packages = f"the stdlib's {packages}" if not more else f"{packages} stdlib packages"
        runs = f"median of {tree['repeats']}" if tree["repeats"] > 1 else "one run"
        rows.append(
            (f"{packages} ({runs})", f"{tree['chunks']:,}", f"{tree['ingest_per_s']:,.0f}",
             f"{tree['add_per_s']:,.0f}", f"{tree['ratio']:.2f}x", f"{tree['unchanged_s']:.2f} s",
             f"{tree['changed_s']:.2f} s")
        )  # fmt: skip
    if large := results.get("large"):
        rows.append(
            (f"`--large`: the whole stdlib and site-packages' sources, {large['files']:,} files",
             f"{large['chunks']:,}", "", "", "",
             f"{large['unchanged_s']:.2f} s ({large['unchanged_cpu_s']:.2f} s CPU)",
             f"{large['changed_s']:.2f} s ({large['changed_cpu_s']:.2f} s CPU; goal: under 1 s)")
        )  # fmt: skip
    return doc_figures.grid(head, rows, "lrrrrrr")


if __name__ == "__main__":
    main()
