"""Ingest throughput for each document kind, beside plain text of the same words.

Each kind gets the same text (paragraphs of English from the standard library's docstrings),
written as 24 files of about 6 pages each by the readers' own writers (fpdf2, python-docx,
python-pptx, openpyxl; CSV, HTML and e-mail by the standard library), then ingested into a fresh
embedded store. Printed: files per second, and kB of extracted text per second (what the
chunker and the embedding see), and the time relative to plain text. Conversion is the
difference: the chunking, counting and writing after it are the same for every kind.

Run: make bench (or uv run --all-packages python benchmarks/bench_documents.py [--quick])
"""

from __future__ import annotations

import logging
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "server" / "store"))
import doc_figures
from document_files import (  # the tests' own writers
    docx_bytes,
    eml_bytes,
    pdf_bytes,
    pptx_bytes,
    xlsx_bytes,
)
from ragbudget_server.store import DocumentStore

FILES = 24
PAGES = 6


def _paragraphs(count: int) -> list[str]:
    """Plain ASCII paragraphs (fpdf2's core fonts are latin-1) from the stdlib's docstrings."""
    import inspect
    import json
    import textwrap
    import urllib.parse

    texts = [inspect.getdoc(o) or "" for m in (json, textwrap, urllib.parse, inspect)
             for o in vars(m).values() if callable(o)]  # fmt: skip
    words = " ".join(t for t in texts if t).encode("ascii", "ignore").decode().split()
    size = 120
    return [" ".join(words[(i * size) % len(words) :][:size]) for i in range(count)]


def _pages(i: int) -> list[str]:
    return _paragraphs(FILES * PAGES)[i * PAGES : (i + 1) * PAGES]


WRITERS: dict[str, Callable[[list[str]], bytes]] = {
    "txt": lambda pages: "\n\n".join(pages).encode(),
    "pdf": pdf_bytes,
    "docx": lambda pages: docx_bytes("Report", pages, [["a", "b"], ["1", "2"]]),
    "pptx": lambda pages: pptx_bytes([(f"Slide {n}", p, "") for n, p in enumerate(pages)]),
    "xlsx": lambda pages: xlsx_bytes({"Sheet": [[n, p] for n, p in enumerate(pages)]}),
    "csv": lambda pages: "\n".join(f'{n},"{p}"' for n, p in enumerate(pages)).encode(),
    "html": lambda pages: "".join(f"<p>{p}</p>" for p in pages).encode(),
    "eml": lambda pages: eml_bytes("Report", "\n\n".join(pages)),
}


def main() -> None:
    logging.getLogger("ragbudget").setLevel(logging.ERROR)
    quick = "--quick" in sys.argv
    files = 6 if quick else FILES
    rows = []
    with tempfile.TemporaryDirectory(prefix="ragbudget-bench-docs-") as tmp:
        warm = Path(tmp) / "warm"  # Chroma's first client and the counter load outside the timing
        warm.mkdir()
        (warm / "a.txt").write_text("\n\n".join(_pages(0)), encoding="utf-8")
        DocumentStore(path=Path(tmp) / "db-warm").ingest([warm])
        for kind, write in WRITERS.items():
            folder = Path(tmp) / kind
            folder.mkdir()
            for i in range(files):
                (folder / f"doc{i}.{kind}").write_bytes(write(_pages(i)))
            on_disk = sum(f.stat().st_size for f in folder.iterdir())
            store = DocumentStore(path=Path(tmp) / f"db-{kind}")
            start = time.perf_counter()
            report = store.ingest([folder])
            took = time.perf_counter() - start
            assert report.files_ingested == files, report
            text = sum(len(store.read(s, max_tokens=1_000_000).text) for s in store.sources())
            store.close()
            rows.append((kind, files, on_disk, text, took))
    base = rows[0][4]
    results = {
        "files": files,
        "pages": PAGES,
        "kinds": [
            {"kind": kind, "files_per_s": n / took, "text_kb_per_s": text / 1024 / took,
             "on_disk_kb": on_disk / 1024, "vs_txt": took / base}
            for kind, n, on_disk, text, took in rows
        ],
    }  # fmt: skip
    print(table(results))
    doc_figures.save(__file__, results)


def table(results: dict[str, Any]) -> str:
    """docs/store.md's table: each kind's ingest rate beside plain text's."""
    files = results["files"]
    rows = [(r["kind"], f"{r['files_per_s']:.1f}", f"{r['text_kb_per_s']:,.0f}",
             f"{r['on_disk_kb']:,.0f}", f"{r['vs_txt']:.2f}x")
            for r in results["kinds"]]  # fmt: skip
    head = ["kind", "files/s", "text kB/s", f"on disk kB ({files} files)", "time vs plain text"]
    return (
        f"{files} files of {results['pages']} pages of the same text per kind, ingested into a "
        f"fresh embedded store.\n\n{doc_figures.grid(head, rows, 'lrrrr')}"
    )


if __name__ == "__main__":
    main()
