"""chunk_text(): every chunk within max_tokens by the counter, true lines and offsets, nothing
lost, structure-aware cuts, overlap, and clear errors."""

from __future__ import annotations

import itertools
import re
import sys
import sysconfig
from pathlib import Path

import pytest
import ragbudget
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError
from ragbudget import TokenCounter, get_counter
from ragbudget.chunking import TextChunk, _fit_spans, chunk_text, detect_kind

STDLIB = Path(sysconfig.get_paths()["stdlib"])
SITE = Path(sysconfig.get_paths()["purelib"])
ESTIMATE = get_counter("estimate")


def check(text: str, chunks: list[TextChunk], counter: TokenCounter, max_tokens: int) -> None:
    """The guarantees every call must keep."""
    assert bool(chunks) == bool(text.strip())
    previous_end = 0
    for i, chunk in enumerate(chunks):
        assert chunk.text == text[chunk.start_index : chunk.end_index]
        assert chunk.text.strip(), "no whitespace-only chunk"
        assert chunk.tokens == counter.count(chunk.text) <= max_tokens
        assert chunk.start_line == text.count("\n", 0, chunk.start_index) + 1
        assert chunk.end_line == text.count("\n", 0, chunk.end_index - 1) + 1
        assert chunk.start_line <= chunk.end_line
        if i:
            assert chunk.start_index > chunks[i - 1].start_index
            assert chunk.end_index > chunks[i - 1].end_index
        # Coverage: what lies between this chunk and what came before is whitespace.
        assert not text[previous_end : chunk.start_index].strip()
        previous_end = max(previous_end, chunk.end_index)
    assert not text[previous_end:].strip()


def check_no_overlap(chunks: list[TextChunk]) -> None:
    for a, b in itertools.pairwise(chunks):
        assert a.end_index <= b.start_index


PIECES = [
    *"abc xyz.,;:!?\n\n\t  #-*`()=_\x1f\xa0\u3000",
    "日本語",
    "中文",
    "한국어",
    "é",
    "ß",
    "😀",
    "👍🏽",
    "\r\n",
    "def f():",
]
TEXTS = st.lists(st.sampled_from(PIECES) | st.text(max_size=3), max_size=400).map("".join)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    text=TEXTS,
    max_tokens=st.integers(4, 80),
    kind=st.sampled_from(["auto", "text", "markdown", "code"]),
)
def test_bound_lines_and_coverage_exact_counter(
    cl100k: TokenCounter, text: str, max_tokens: int, kind: str
) -> None:
    chunks = chunk_text(text, max_tokens=max_tokens, counter=cl100k, kind=kind)  # type: ignore[arg-type]
    check(text, chunks, cl100k, max_tokens)
    check_no_overlap(chunks)


@settings(max_examples=60, deadline=None)
@given(text=TEXTS, max_tokens=st.integers(4, 80), kind=st.sampled_from(["text", "markdown"]))
def test_bound_lines_and_coverage_estimator(text: str, max_tokens: int, kind: str) -> None:
    chunks = chunk_text(text, max_tokens=max_tokens, kind=kind)  # type: ignore[arg-type]
    check(text, chunks, ESTIMATE, max_tokens)
    check_no_overlap(chunks)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=TEXTS, max_tokens=st.integers(8, 80), data=st.data())
def test_overlap_within_bounds(
    cl100k: TokenCounter, text: str, max_tokens: int, data: st.DataObject
) -> None:
    overlap = data.draw(st.integers(1, max_tokens - 1))
    chunks = chunk_text(text, max_tokens=max_tokens, overlap=overlap, counter=cl100k)
    check(text, chunks, cl100k, max_tokens)
    for a, b in itertools.pairwise(chunks):
        if b.start_index < a.end_index:  # the repeated tail is at most `overlap` tokens
            assert cl100k.count(text[b.start_index : a.end_index]) <= overlap


@pytest.mark.parametrize(
    "counter",
    [
        lambda s: len(s.split()),  # words: exactly additive over lines
        lambda s: (len(s) + 9) // 10,  # ceil: the line estimate overcounts
        lambda s: 5 * s.count("\n") + len(s) // 4,  # newlines heavy: the line estimate undercounts
    ],
    ids=["words", "ceil-chars", "newline-heavy"],
)
def test_any_callable_counter_is_obeyed(counter: object) -> None:
    text = (STDLIB / "textwrap.py").read_text(encoding="utf-8")
    chunks = chunk_text(text, max_tokens=100, counter=counter)  # type: ignore[arg-type]
    check(text, chunks, get_counter(counter), 100)  # type: ignore[arg-type]


def test_spans_over_the_limit_are_split_again(cl100k: TokenCounter) -> None:
    text = (STDLIB / "textwrap.py").read_text(encoding="utf-8")[:6000]
    spans, counts = _fit_spans(text, [(0, 3000), (3000, 6000)], "code", cl100k, 120, 120)
    assert len(spans) > 4
    assert all(c == cl100k.count(text[s:e]) <= 120 for (s, e), c in zip(spans, counts, strict=True))
    assert not text[: spans[0][0]].strip()
    assert not text[spans[-1][1] :].strip()


# ------------------------------------------------------------------ real files
def test_stdlib_python_by_exact_counter_and_estimator(cl100k: TokenCounter) -> None:
    for name in ("argparse.py", "heapq.py"):
        text = (STDLIB / name).read_text(encoding="utf-8")
        for counter in (cl100k, ESTIMATE):
            chunks = chunk_text(text, max_tokens=256, counter=counter, path=name)
            check(text, chunks, counter, 256)
            check_no_overlap(chunks)
            fill = sum(c.tokens for c in chunks[:-1]) / (256 * (len(chunks) - 1))
            assert fill > 0.5, "chunks should be reasonably full"


def test_python_splits_at_def_and_class_boundaries(cl100k: TokenCounter) -> None:
    funcs = [
        f"def function_{i}(alpha, beta):\n"
        f'    """Compute the {i}th value from alpha and beta."""\n'
        f"    total = alpha * {i} + beta\n"
        f"    if total > {i * 10}:\n"
        f"        return total - {i}\n"
        f"    return total + {i}\n"
        for i in range(30)
    ]
    classes = [
        f"class Thing{i}:\n    size = {i}\n\n    def grow(self):\n        return self.size + 1\n"
        for i in range(5)
    ]
    text = "import math\n\n\n" + "\n\n".join(funcs + classes)
    chunks = chunk_text(text, max_tokens=140, counter=cl100k, path="module.py")
    check(text, chunks, cl100k, 140)
    assert len(chunks) > 5
    for chunk in chunks[1:]:
        assert re.match(r"(def|class) \w+", chunk.text), chunk.text[:40]
    # The stdlib: most chunk starts are at a line start; many at a definition.
    real = (STDLIB / "argparse.py").read_text(encoding="utf-8")
    starts = [c.text.lstrip() for c in chunk_text(real, max_tokens=256, counter=cl100k)[1:]]
    defs = sum(bool(re.match(r"(async def|def|class|@)", s)) for s in starts)
    assert defs / len(starts) > 0.3


def test_code_chunks_keep_their_indentation(cl100k: TokenCounter) -> None:
    text = (STDLIB / "argparse.py").read_text(encoding="utf-8")
    chunks = chunk_text(text, max_tokens=200, counter=cl100k, kind="code")
    for chunk in chunks:
        line_start = text.rfind("\n", 0, chunk.start_index) + 1
        before = text[line_start : chunk.start_index]
        if before and not before.strip():  # only when the indentation would not fit
            assert cl100k.count(before + chunk.text) > 200


def test_markdown_splits_at_headings(cl100k: TokenCounter) -> None:
    sections = [
        f"## Section {i}\n\nThis section explains topic number {i} in a few plain sentences. "
        f"It has enough words to fill part of a chunk.\n\n- point one of {i}\n- point two\n"
        for i in range(20)
    ]
    text = "# Title\n\nIntro paragraph.\n\n" + "\n".join(sections)
    chunks = chunk_text(text, max_tokens=100, counter=cl100k, path="README.md")
    check(text, chunks, cl100k, 100)
    assert len(chunks) > 5
    for chunk in chunks[1:]:
        assert chunk.text.startswith("## Section"), chunk.text[:40]


def test_real_markdown_and_rst_files() -> None:
    md_files = sorted(p for p in SITE.rglob("*.md") if p.stat().st_size > 3000)[:3]
    assert md_files, "site-packages ships markdown files"
    for path in md_files:
        text = path.read_text(encoding="utf-8", errors="replace")
        chunks = chunk_text(text, max_tokens=128, path=path)
        check(text, chunks, ESTIMATE, 128)


def test_cjk_texts(cl100k: TokenCounter) -> None:
    files = sorted((STDLIB / "test" / "cjkencodings").glob("*-utf8.txt"))
    assert files
    for path in files:
        text = path.read_text(encoding="utf-8")
        for counter in (cl100k, ESTIMATE):
            chunks = chunk_text(text, max_tokens=32, counter=counter)
            check(text, chunks, counter, 32)


@pytest.mark.parametrize(
    "text",
    ["word " * 20_000, "x" * 60_000, "日本語のテキスト" * 5_000, "a,b;" * 15_000],
    ids=["words", "no-whitespace", "cjk", "punctuation"],
)
def test_huge_single_line(cl100k: TokenCounter, text: str) -> None:
    chunks = chunk_text(text, max_tokens=200, counter=cl100k)
    check(text, chunks, cl100k, 200)
    assert len(chunks) > 10
    assert all(c.start_line == c.end_line == 1 for c in chunks)


def test_overlap_repeats_the_previous_tail(cl100k: TokenCounter) -> None:
    text = (STDLIB / "textwrap.py").read_text(encoding="utf-8")
    chunks = chunk_text(text, max_tokens=150, overlap=30, counter=cl100k)
    check(text, chunks, cl100k, 150)
    for a, b in itertools.pairwise(chunks):
        assert b.start_index < a.end_index, "consecutive chunks overlap"
        assert cl100k.count(text[b.start_index : a.end_index]) <= 30
        line_start = text.rfind("\n", 0, b.start_index) + 1
        assert not text[line_start : b.start_index].strip(), "the tail starts at a line start"
    # CJK without spaces: the tail falls back to characters.
    cjk = "日本語のテキストです" * 400
    chunks = chunk_text(cjk, max_tokens=60, overlap=10, counter=cl100k)
    check(cjk, chunks, cl100k, 60)
    assert all(b.start_index < a.end_index for a, b in itertools.pairwise(chunks))


# ------------------------------------------------------------------ edges and errors
@pytest.mark.parametrize("text", ["", " ", "\n\n\t \r\n"])
def test_empty_and_whitespace_give_nothing(text: str) -> None:
    assert chunk_text(text) == []


def test_lines_with_crlf_and_small_text() -> None:
    text = "first line\r\nsecond line\r\n\r\nthird\r\n"
    [chunk] = chunk_text(text, max_tokens=100)
    assert (chunk.start_line, chunk.end_line) == (1, 4)
    assert chunk.text == text.rstrip()


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"max_tokens": 0}, ValueError, "max_tokens must be >= 1"),
        ({"max_tokens": -5}, ValueError, "max_tokens"),
        ({"max_tokens": True}, TypeError, "max_tokens must be an int"),
        ({"max_tokens": 10.0}, TypeError, "max_tokens must be an int"),
        ({"overlap": -1}, ValueError, "overlap must be >= 0"),
        ({"max_tokens": 10, "overlap": 10}, ValueError, r"overlap must be .* < max_tokens \(10\)"),
        ({"overlap": "3"}, TypeError, "overlap must be an int"),
        ({"kind": "pdf"}, ValueError, "kind must be one of"),
        ({"path": 3}, TypeError, "path must be"),
        ({"counter": "nope"}, ValueError, "unknown counter spec"),
    ],
)
def test_bad_arguments_are_named(
    kwargs: dict[str, object], error: type[Exception], match: str
) -> None:
    with pytest.raises(error, match=match):
        chunk_text("some text", **kwargs)  # type: ignore[arg-type]


def test_bad_text_is_named() -> None:
    with pytest.raises(TypeError, match="text must be a str"):
        chunk_text(b"bytes")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="text must be valid unicode"):
        chunk_text("bad \ud800 surrogate")


def test_a_character_over_the_limit_is_an_error(cl100k: TokenCounter) -> None:
    assert cl100k.count("😀") > 1
    with pytest.raises(ValueError, match="max_tokens=1 is too small"):
        chunk_text("ok 😀 ok", max_tokens=1, counter=cl100k)


def test_missing_split_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "semantic_text_splitter", None)
    with pytest.raises(ImportError, match=r"pip install 'ragbudget\[split\]'"):
        chunk_text("some text")


def test_text_chunk_is_frozen_and_strict() -> None:
    chunk = chunk_text("hello world")[0]
    assert chunk.model_dump() == {
        "text": "hello world",
        "start_line": 1,
        "end_line": 1,
        "start_index": 0,
        "end_index": 11,
        "tokens": ESTIMATE.count("hello world"),
    }
    with pytest.raises(ValidationError):
        chunk.text = "x"  # type: ignore[misc]
    with pytest.raises(ValidationError):
        TextChunk(text="a", start_line=1, end_line=1, start_index=0, end_index=1, tokens=1, x=1)  # type: ignore[call-arg]


@pytest.mark.parametrize(
    ("path", "text", "kind"),
    [
        ("README.md", "plain words", "markdown"),
        ("src/app.py", "plain words", "code"),
        ("Makefile", "all:\n\techo hi\n", "code"),
        ("notes.rst", "Title\n=====\n", "text"),
        (None, "# Title\n\nSome *words* here.\n", "markdown"),
        (None, "import os\n\n\ndef main():\n    return os.getcwd()\n", "code"),
        (None, "Just a few sentences. Nothing more.\n", "text"),
        (None, (STDLIB / "argparse.py").read_text(encoding="utf-8"), "code"),
    ],
)
def test_detect_kind(path: str | None, text: str, kind: str) -> None:
    assert detect_kind(text, path) == kind


def test_top_level_exports() -> None:
    assert ragbudget.chunk_text is chunk_text
    assert ragbudget.TextChunk is TextChunk
    assert {"chunk_text", "TextChunk"} <= set(ragbudget.__all__)
