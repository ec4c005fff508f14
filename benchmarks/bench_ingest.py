"""Ingest throughput against Chroma's own `add`, and the cost of re-ingesting.

Side by side in one run, on copies of parts of the standard library: `DocumentStore.ingest`
of a fresh store (walk, read, chunk, count, embed, write) against `collection.add` of the very
records it wrote (the same ids, documents, metadata and precomputed embeddings, in the same
batches of 256) into a fresh collection; then a re-ingest of the unchanged tree, and one
after a one-line change to one file (both stat each file first: an unchanged file is not read).

Run: make bench (or uv run --all-packages python benchmarks/bench_ingest.py [--quick])
"""

from __future__ import annotations

import logging
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import chromadb
from chromadb.config import Settings

sys.path.insert(0, str(Path(__file__).parent))
from _corpus import STDLIB
from ragbudget_server.store import DocumentStore

SMALL = ("json", "email", "asyncio", "logging", "http", "xml", "importlib", "unittest")
LARGE = (*SMALL, "multiprocessing", "concurrent", "ctypes", "urllib", "tomllib", "sqlite3",
         "wsgiref", "zoneinfo", "pydoc_data", "lib2to3", "idlelib", "tkinter",
         "distutils")  # fmt: skip
BATCH = 256


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


def main() -> None:
    logging.getLogger("ragbudget").setLevel(logging.ERROR)
    quick = "--quick" in sys.argv
    sizes = [("small", SMALL, 3)] + ([] if quick else [("large", LARGE, 1)])
    print(f"{'tree':>6} {'chunks':>7} {'ingest/s':>9} {'add/s':>8} {'ratio':>6} "
          f"{'again s':>8} {'1 line s':>9} {'repeats':>8}")  # fmt: skip
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
              f"{ratio:>5.2f}x {again:>8.2f} {line:>9.2f} {repeats:>8}")  # fmt: skip
    print("ratio: ingest chunks/s over Chroma's own add of the same records (goal >= 0.8x)")


if __name__ == "__main__":
    main()
