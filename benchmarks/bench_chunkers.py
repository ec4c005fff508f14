"""Chunkers side by side on real files: throughput and chunk quality, in one run.

Candidates (each driven by the same ragbudget counter, passed as a callback):

- `sts text`: semantic-text-splitter's `TextSplitter` for every file (Rust; levels: newline runs,
  sentences, words).
- `sts structured`: semantic-text-splitter's `MarkdownSplitter` for markdown, `CodeSplitter`
  (tree-sitter-python) for Python, `TextSplitter` otherwise.
- `semchunk`: semchunk 4 (`chunkerify(counter, max_tokens)`, pure Python, memoized counter).
- `chonkie recursive`: chonkie's `RecursiveChunker` with its default rules (chonkie's code
  chunker needs grammars downloaded at run time and its markdown recipes come from a hub,
  so neither works offline).
- `ragbudget`: `ragbudget.chunking.chunk_text` (the chosen library plus the exact-count check).

Corpora: Python standard-library sources, markdown descriptions from the METADATA files in
site-packages plus the `.md` files there, reStructuredText descriptions from METADATA files,
and the stdlib's CJK test texts (`test/cjkencodings/*-utf8.txt`).

Quality figures, per corpus and chunker (max_tokens=256 unless told):
  MB/s     throughput (characters of input per second / 1e6)
  fill     mean tokens / max_tokens over chunks that are not the last of their file
  tiny%    of those, chunks under a tenth of max_tokens (fragments)
  over     chunks above max_tokens by the counter that drove the chunker (must be 0)
  line%    chunk ends on a line end          para%  chunk ends on a paragraph end (blank line)
  sent%    chunk ends after . ! ? : ; 。！？ or on a line end
  struct%  chunk starts (after the first) that are a def/class/decorator line (code) or a
           heading (markdown): the structure boundaries a chunker could cut at
Overlap (code corpus, overlap=32): share of consecutive chunks that overlap, and mean overlap
in tokens.

Run: `uv run --all-packages python benchmarks/bench_chunkers.py` (or `make bench`).
"""

from __future__ import annotations

import re
import statistics
import sys
import sysconfig
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ragbudget import TokenCounter, get_counter, use_bundled_tiktoken_files

sys.path.insert(0, str(Path(__file__).parent))
import doc_figures

use_bundled_tiktoken_files()

MAX_TOKENS = 256
OVERLAP = 32
Span = tuple[int, int]
Chunker = Callable[[str, str, TokenCounter, int, int], list[Span]]

STDLIB = Path(sysconfig.get_paths()["stdlib"])
SITE = Path(sysconfig.get_paths()["purelib"])


# ---------------------------------------------------------------- corpora
def _metadata_bodies(content_type: str) -> list[str]:
    bodies = []
    for meta in sorted(SITE.glob("*.dist-info/METADATA")):
        raw = meta.read_text(encoding="utf-8", errors="replace")
        head, _, body = raw.partition("\n\n")
        if f"Description-Content-Type: {content_type}" in head and len(body) > 3000:
            bodies.append(body)
    return bodies


def corpora(budget_chars: int) -> dict[str, list[tuple[str, str]]]:
    """name -> [(kind, text)], each corpus capped near `budget_chars` characters."""

    def take(items: list[tuple[str, str]]) -> list[tuple[str, str]]:
        out, total = [], 0
        for item in items:
            if total >= budget_chars:
                break
            out.append(item)
            total += len(item[1])
        return out

    py_files = sorted(p for p in STDLIB.glob("*.py") if p.stat().st_size > 8000)
    code = [("code", p.read_text(encoding="utf-8")) for p in py_files[::3]]
    md_files = sorted(p for p in SITE.rglob("*.md") if p.stat().st_size > 3000)
    markdown = [("markdown", b) for b in _metadata_bodies("text/markdown")]
    markdown += [("markdown", p.read_text(encoding="utf-8", errors="replace")) for p in md_files]
    rst = [("text", b) for b in _metadata_bodies("text/x-rst")]
    cjk_files = sorted((STDLIB / "test" / "cjkencodings").glob("*-utf8.txt"))
    cjk_text = "\n".join(p.read_text(encoding="utf-8") for p in cjk_files)
    return {
        "python": take(code),
        "markdown": take(markdown[::2]),
        "rst": take(rst),
        "cjk": [("text", cjk_text)],
    }


# ---------------------------------------------------------------- candidates
def _spans_from_indices(text: str, pieces: list[tuple[int, str]]) -> list[Span]:
    return [(start, start + len(piece)) for start, piece in pieces]


def sts_text(
    text: str, kind: str, counter: TokenCounter, max_tokens: int, overlap: int
) -> list[Span]:
    from semantic_text_splitter import TextSplitter

    splitter = TextSplitter.from_callback(counter.count, max_tokens, overlap=overlap)
    return _spans_from_indices(text, splitter.chunk_indices(text))


def sts_structured(
    text: str, kind: str, counter: TokenCounter, max_tokens: int, overlap: int
) -> list[Span]:
    from semantic_text_splitter import CodeSplitter, MarkdownSplitter, TextSplitter

    if kind == "markdown":
        splitter: object = MarkdownSplitter.from_callback(
            counter.count, max_tokens, overlap=overlap
        )
    elif kind == "code":
        import tree_sitter_python  # type: ignore[import-not-found]  # not in the workspace

        splitter = CodeSplitter.from_callback(
            tree_sitter_python.language(), counter.count, max_tokens, overlap=overlap
        )
    else:
        splitter = TextSplitter.from_callback(counter.count, max_tokens, overlap=overlap)
    return _spans_from_indices(text, splitter.chunk_indices(text))  # type: ignore[attr-defined]


def semchunk_(
    text: str, kind: str, counter: TokenCounter, max_tokens: int, overlap: int
) -> list[Span]:
    import semchunk

    chunker = semchunk.chunkerify(counter.count, max_tokens)  # type: ignore[attr-defined]
    _, offsets = chunker(text, offsets=True, overlap=overlap or None)
    return [tuple(o) for o in offsets]  # type: ignore[misc]


def chonkie_recursive(
    text: str, kind: str, counter: TokenCounter, max_tokens: int, overlap: int
) -> list[Span]:
    from chonkie import RecursiveChunker

    chunker = RecursiveChunker(tokenizer=counter.count, chunk_size=max_tokens)  # type: ignore[arg-type]
    return [(c.start_index, c.end_index) for c in chunker.chunk(text)]


def ragbudget_(
    text: str, kind: str, counter: TokenCounter, max_tokens: int, overlap: int
) -> list[Span]:
    from ragbudget.chunking import chunk_text

    chunks = chunk_text(
        text,
        max_tokens=max_tokens,
        overlap=overlap,
        counter=counter,
        kind=kind,  # type: ignore[arg-type]
    )
    return [(c.start_index, c.end_index) for c in chunks]


CANDIDATES: dict[str, Chunker] = {
    "sts text": sts_text,
    "sts structured": sts_structured,
    "semchunk": semchunk_,
    "chonkie recursive": chonkie_recursive,
    "ragbudget": ragbudget_,
}


# ---------------------------------------------------------------- measures
_LINE_END = re.compile(r"[ \t]*(?:\r?\n|$)")
_PARA_END = re.compile(r"[ \t]*(?:\r?\n[ \t]*\r?\n|$)")
_SENT_END = re.compile(r"[.!?:;。！？][\"')\]]*$")
_DEF = re.compile(r"[ \t]*(?:async\s+def|def|class|@)\b|[ \t]*@")
_HEADING = re.compile(r"#{1,6}\s|[^\n]+\n(?:=+|-+)[ \t]*(?:\n|$)")


def measure(
    docs: list[tuple[str, str]], fn: Chunker, counter: TokenCounter, overlap: int = 0
) -> dict[str, float]:
    started = time.perf_counter()
    results = [(text, kind, fn(text, kind, counter, MAX_TOKENS, overlap)) for kind, text in docs]
    seconds = time.perf_counter() - started
    chars = sum(len(t) for _, t in docs)
    fills, over, ends, starts = [], 0, [], []
    overlaps, pairs, tok_overlap = 0, 0, []
    for text, kind, spans in results:
        for i, (start, end) in enumerate(spans):
            piece = text[start:end]
            tokens = counter.count(piece)
            over += tokens > MAX_TOKENS
            last = i == len(spans) - 1
            if not last:
                fills.append(tokens / MAX_TOKENS)
                stripped_end = start + len(piece.rstrip())
                ends.append(
                    (
                        bool(_LINE_END.match(text, stripped_end)),
                        bool(_PARA_END.match(text, stripped_end)),
                        bool(
                            _LINE_END.match(text, stripped_end) or _SENT_END.search(piece.rstrip())
                        ),
                    )
                )
            if i:
                lead = start + len(piece) - len(piece.lstrip())
                line_start = text.rfind("\n", 0, lead) + 1
                at_line_start = not text[line_start:lead].strip()
                line_head = text[line_start:]
                pattern = _DEF if kind == "code" else _HEADING
                starts.append((at_line_start, bool(pattern.match(line_head)) and at_line_start))
                prev_end = spans[i - 1][1]
                pairs += 1
                if start < prev_end:
                    overlaps += 1
                    tok_overlap.append(counter.count(text[start:prev_end]))

    def share(xs: list[bool]) -> float:
        return 100 * sum(xs) / len(xs) if xs else 0.0

    return {
        "chunks": sum(len(s) for _, _, s in results),
        "MB/s": chars / seconds / 1e6,
        "fill": statistics.fmean(fills) if fills else 0.0,
        "tiny%": share([f < 0.1 for f in fills]),
        "over": over,
        "line%": share([e[0] for e in ends]),
        "para%": share([e[1] for e in ends]),
        "sent%": share([e[2] for e in ends]),
        "struct%": share([s[1] for s in starts]),
        "midline%": share([not s[0] for s in starts]),
        "ovl%": 100 * overlaps / pairs if pairs else 0.0,
        "ovl_tok": statistics.fmean(tok_overlap) if tok_overlap else 0.0,
    }


def _row(name: str, m: dict[str, float], cols: list[str]) -> str:
    cells = []
    for col in cols:
        value = m[col]
        cells.append(f"{value:>9.0f}" if col in ("chunks", "over") else f"{value:>9.2f}")
    return f"{name:<18}" + "".join(cells)


def main() -> int:
    budget = int(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1].isdigit() else 250_000
    data = corpora(budget)
    estimate = get_counter("estimate")
    exact = get_counter("tiktoken:cl100k_base")
    cols = ["chunks", "MB/s", "fill", "tiny%", "over", "line%", "para%", "sent%", "struct%"]
    results: dict[str, Any] = {
        "max_tokens": MAX_TOKENS, "overlap": OVERLAP,
        "corpora": {corpus: sum(len(t) for _, t in docs) for corpus, docs in data.items()},
        "counters": {}, "overlapped": {},
    }  # fmt: skip
    for counter in (estimate, exact):
        print(f"\n## counter {counter.name}, max_tokens={MAX_TOKENS}")
        by_corpus = results["counters"].setdefault(counter.name, {})
        for corpus, docs in data.items():
            size = sum(len(t) for _, t in docs)
            print(f"\n{corpus}: {len(docs)} files, {size:,} chars")
            print(f"{'chunker':<18}" + "".join(f"{c:>9}" for c in cols))
            for name, fn in CANDIDATES.items():
                try:
                    m = measure(docs, fn, counter)
                    print(_row(name, m, cols), flush=True)
                except ImportError as exc:
                    m = None
                    print(f"{name:<18} n/a: {exc} (pip install tree-sitter-python)", flush=True)
                by_corpus.setdefault(corpus, {})[name] = m
    print(f"\n## overlap={OVERLAP} tokens on the python corpus, counter {estimate.name}")
    cols = ["chunks", "MB/s", "fill", "over", "ovl%", "ovl_tok", "struct%"]
    print(f"{'chunker':<18}" + "".join(f"{c:>9}" for c in cols))
    for name, fn in CANDIDATES.items():
        if name == "chonkie recursive":
            print(f"{name:<18} n/a: RecursiveChunker has no overlap (a refinery adds context)")
            continue
        try:
            m = measure(data["python"], fn, estimate, OVERLAP)
            print(_row(name, m, cols), flush=True)
            results["overlapped"][name] = m
        except ImportError as exc:
            print(f"{name:<18} n/a: {exc} (pip install tree-sitter-python)", flush=True)
    doc_figures.save(__file__, results)
    return 0


LABELS = {
    "sts text": "semantic-text-splitter `TextSplitter`",
    "sts structured": "semantic-text-splitter structured (`CodeSplitter` tree-sitter / "
    "`MarkdownSplitter`)",
    "semchunk": "semchunk",
    "chonkie recursive": "chonkie `RecursiveChunker`",
    "ragbudget": "**ragbudget `chunk_text`**",
}


FORMATS = {"MB/s": ".2f", "fill": ".2f", "tiny%": ".1f", "over": ".0f", "para%": ".0f",
           "struct%": ".0f"}  # fmt: skip


def _cells(m: dict[str, float] | None, cols: list[str]) -> list[str]:
    return ["n/a" if m is None else format(m[c], FORMATS[c]) for c in cols]


def table(results: dict[str, Any]) -> str:
    """docs/chunking.md's table: the chunkers on code and markdown, by exact cl100k counts."""
    by = results["counters"]["tiktoken:cl100k_base"]
    py_cols = ["MB/s", "fill", "tiny%", "over", "para%", "struct%"]
    md_cols = ["MB/s", "fill", "over", "para%", "struct%"]
    rows = [[label, *_cells(by["python"][name], py_cols), *_cells(by["markdown"][name], md_cols)]
            for name, label in LABELS.items()]  # fmt: skip
    head = ["counter cl100k_base", "python MB/s", "fill", "tiny%", "over", "para%", "def%",
            "markdown MB/s", "fill", "over", "para%", "heading%"]  # fmt: skip
    sizes = results["corpora"]
    return (
        f"`max_tokens={results['max_tokens']}`; {sizes['python'] // 1000}K characters of "
        f"standard-library Python, {sizes['markdown'] // 1000}K of markdown:\n\n"
        + doc_figures.grid(head, rows, "l" + "r" * 11)
    )


def table_estimate(results: dict[str, Any]) -> str:
    """docs/chunking.md's table: the same chunkers driven by the default estimate."""
    by = results["counters"]["estimate"]
    corpora = list(results["corpora"])
    rows = []
    for name, label in LABELS.items():
        ms = [by[c][name] for c in corpora]
        rows.append([label, *("n/a" if m is None else f"{m['MB/s']:.2f}" for m in ms),
                     str(sum(int(m["over"]) for m in ms if m is not None))])  # fmt: skip
    head = ["counter estimate", *(f"{c} MB/s" for c in corpora), "over, all corpora"]
    return doc_figures.grid(head, rows, "l" + "r" * (len(corpora) + 1))


def table_overlap(results: dict[str, Any]) -> str:
    """docs/chunking.md's table: overlap on the python corpus, by the estimate."""
    rows = [(LABELS[name], f"{m['ovl%']:.0f}%", f"{m['ovl_tok']:.1f}")
            for name, m in results["overlapped"].items()]  # fmt: skip
    head = [f"`overlap={results['overlap']}`, estimate", "pairs that overlap", "mean tokens"]
    return doc_figures.grid(head, rows, "lrr")


if __name__ == "__main__":
    raise SystemExit(main())
