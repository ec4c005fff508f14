"""Token-aware chunking for ingestion, on top of semantic-text-splitter (`ragbudget[split]`).

`chunk_text()` cuts a text into chunks of at most `max_tokens` tokens by a ragbudget counter,
at the largest structural unit that fits: headings, blocks and paragraphs for markdown, runs of
blank lines then lines for code and plain text (then sentences, words, characters). Each chunk
carries its 1-based start and end line and its character offsets into the original text.

How it stays fast and exact: the Rust splitter sizes candidate chunks in characters, with a
capacity from the text's own measured characters per token (one count of the whole text) and
a margin; every chunk is then counted with the real counter, and a chunk over the limit is
split again the same way at its own density, and if that is not enough, with the real counter
itself as the splitter's sizing. The guarantee rests on that last count, never on the ratio.
"""

from __future__ import annotations

import bisect
import logging
import os
import re
from collections.abc import Callable, Sequence
from pathlib import PurePath
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field

from ragbudget.counters import CounterSpec, TokenCounter, count_many, get_counter
from ragbudget.text import counted

__all__ = ["ChunkKind", "TextChunk", "chunk_text", "detect_kind"]

logger = logging.getLogger(__name__)

ChunkKind = Literal["auto", "text", "markdown", "code"]
_KINDS: tuple[str, ...] = get_args(ChunkKind)

Span = tuple[int, int]


class TextChunk(BaseModel):
    """One piece of a chunked text, with where it came from.

    `text == original[start_index:end_index]`; lines are counted with `\\n` as the separator.
    Use:
        >>> from ragbudget.chunking import chunk_text
        >>> chunks = chunk_text("# Title\\n\\nSome text.\\n", max_tokens=64)
        >>> (chunks[0].start_line, chunks[0].end_line)
        (1, 3)
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    text: str = Field(description="The chunk's text, a slice of the original text.")
    start_line: int = Field(description="1-based line of the original text where the chunk starts.")
    end_line: int = Field(description="1-based line where the chunk ends (inclusive).")
    start_index: int = Field(description="Character offset of the chunk's start in the original.")
    end_index: int = Field(description="Character offset just past the chunk's end.")
    tokens: int = Field(description="Token count of `text` by the counter used; <= max_tokens.")


# ---------------------------------------------------------------- kind detection
_MARKDOWN_SUFFIXES = frozenset({".md", ".markdown", ".mdx", ".mdown", ".mkd", ".mkdn"})
_TEXT_SUFFIXES = frozenset({".txt", ".text", ".rst", ".log", ".csv", ".tsv", ".adoc"})
_CODE_SUFFIXES = frozenset(
    {
        ".py",
        ".pyi",
        ".pyx",
        ".js",
        ".jsx",
        ".mjs",
        ".cjs",
        ".ts",
        ".tsx",
        ".go",
        ".rs",
        ".java",
        ".kt",
        ".kts",
        ".scala",
        ".c",
        ".h",
        ".cc",
        ".cpp",
        ".cxx",
        ".hpp",
        ".hh",
        ".cs",
        ".rb",
        ".php",
        ".swift",
        ".m",
        ".mm",
        ".sh",
        ".bash",
        ".zsh",
        ".fish",
        ".ps1",
        ".lua",
        ".pl",
        ".pm",
        ".r",
        ".jl",
        ".sql",
        ".html",
        ".htm",
        ".css",
        ".scss",
        ".less",
        ".vue",
        ".svelte",
        ".xml",
        ".yaml",
        ".yml",
        ".toml",
        ".ini",
        ".cfg",
        ".json",
        ".proto",
        ".graphql",
        ".tf",
        ".dart",
        ".ex",
        ".exs",
        ".erl",
        ".hs",
        ".ml",
        ".clj",
        ".zig",
        ".nim",
        ".el",
        ".cmake",
        ".gradle",
    }
)
_CODE_NAMES = frozenset({"makefile", "dockerfile", "cmakelists.txt", "justfile", "rakefile"})
_CODE_LINE = re.compile(
    r"[ \t]*(?:(?:async[ \t]+)?def |class |import |from [\w.]+ import |@\w|function\b|"
    r"const |let |var |fn |func |package |#include|public |private |return\b|\}|.*[;{][ \t]*$)"
)
_CODE_STRONG = re.compile(
    r"^(?:(?:async )?def \w+\(|class \w+[:(]|import [\w.]+|from [\w.]+ import |#include\b|"
    r"function \w+\(|package \w+|func \w+|fn \w+|(?:public|private) )",
    re.MULTILINE,
)
_MD_HEADING = re.compile(r"^(?:#{1,6}[ \t]+\S|```|~~~)", re.MULTILINE)
_SNIFF_CHARS = 20_000


def detect_kind(text: str, path: str | os.PathLike[str] | None = None) -> str:
    """'markdown', 'code' or 'text': from the path's suffix when it tells, else from the content."""
    if path is not None:
        name = PurePath(os.fspath(path)).name.lower()
        suffix = PurePath(name).suffix
        if suffix in _MARKDOWN_SUFFIXES:
            return "markdown"
        if suffix in _CODE_SUFFIXES or name in _CODE_NAMES:
            return "code"
        if suffix in _TEXT_SUFFIXES:
            return "text"
    sample = text[:_SNIFF_CHARS]
    lines = [line for line in sample.splitlines() if line.strip()]
    if not lines:
        return "text"
    code_lines = sum(1 for line in lines if _CODE_LINE.match(line))
    if code_lines >= 0.3 * len(lines) or len(_CODE_STRONG.findall(sample)) >= 3:
        return "code"
    if _MD_HEADING.search(sample):
        return "markdown"
    return "text"


# ---------------------------------------------------------------- validation
def _check_args(
    text: object, max_tokens: object, overlap: object, kind: object, path: object
) -> None:
    if not isinstance(text, str):
        msg = f"text must be a str, got {type(text).__name__}"
        raise TypeError(msg)
    for name, value in (("max_tokens", max_tokens), ("overlap", overlap)):
        if isinstance(value, bool) or not isinstance(value, int):
            msg = f"{name} must be an int, got {value!r}"
            raise TypeError(msg)
    assert isinstance(max_tokens, int)
    assert isinstance(overlap, int)
    if max_tokens < 1:
        msg = f"max_tokens must be >= 1, got {max_tokens}"
        raise ValueError(msg)
    if not 0 <= overlap < max_tokens:
        msg = f"overlap must be >= 0 and < max_tokens ({max_tokens}), got {overlap}"
        raise ValueError(msg)
    if kind not in _KINDS:
        msg = f"kind must be one of {', '.join(map(repr, _KINDS))}, got {kind!r}"
        raise ValueError(msg)
    if path is not None and not isinstance(path, str | os.PathLike):
        msg = f"path must be a str, an os.PathLike or None, got {type(path).__name__}"
        raise TypeError(msg)


def _splitter_module() -> Any:
    try:
        import semantic_text_splitter
    except ImportError as exc:
        msg = "chunk_text() needs semantic-text-splitter: pip install 'ragbudget[split]'"
        raise ImportError(msg) from exc
    return semantic_text_splitter


# ---------------------------------------------------------------- sizing
_FILL = 0.9
"""Chunks are cut at this share of the limit in characters at the measured density, so that
few come out over it (those are split again)."""


def _char_capacity(chars: int, tokens: int, limit: int) -> int:
    """Characters that should hold `limit` tokens, for text counting `tokens` in `chars`."""
    return max(1, int(limit * _FILL * chars / max(tokens, 1)))


def _splitter(kind: str, size: Callable[[str], int] | None, capacity: int) -> Any:
    """A splitter sizing chunks with `size`, or in characters when it is None."""
    sts = _splitter_module()
    cls = sts.MarkdownSplitter if kind == "markdown" else sts.TextSplitter
    return cls(capacity) if size is None else cls.from_callback(size, capacity)


def _split(
    text: str, base: int, kind: str, size: Callable[[str], int] | None, capacity: int
) -> list[Span]:
    try:
        pieces: list[tuple[int, str]] = _splitter(kind, size, capacity).chunk_indices(text)
    except UnicodeEncodeError as exc:
        msg = f"text must be valid unicode (no lone surrogates): {exc}"
        raise ValueError(msg) from None
    # Python's whitespace (str.strip) is wider than Unicode's White_Space the splitter trims
    # (e.g. U+001C..U+001F): a piece of nothing else is dropped like any other whitespace.
    return [(base + start, base + start + len(piece)) for start, piece in pieces if piece.strip()]


def _longest_prefix(text: str, start: int, end: int, counter: TokenCounter, limit: int) -> int:
    lo, hi = start, end
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if counter.count(text[start:mid]) <= limit:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _hard_split(
    text: str, span: Span, counter: TokenCounter, limit: int, max_tokens: int
) -> list[Span]:
    """Last resort for a piece the splitter could not bring under `limit`: longest fitting
    character prefixes, one after another (a prefix may use up to `max_tokens` when not even
    one character fits in `limit`, which is max_tokens - overlap)."""
    out: list[Span] = []
    start, end = span
    while start < end:
        stop = _longest_prefix(text, start, end, counter, limit)
        if stop == start:
            stop = _longest_prefix(text, start, end, counter, max_tokens)
        if stop == start:
            line = text.count("\n", 0, start) + 1
            msg = (
                f"max_tokens={max_tokens} is too small: the character {text[start]!r} on line "
                f"{line} alone counts {counted(counter.count(text[start]), 'token')} by "
                f"{counter.name}"
            )
            raise ValueError(msg)
        out.append((start, stop))
        start = stop
    return out


def _with_indent(text: str, span: Span, floor: int) -> Span:
    """Extend a chunk that starts a line back over that line's indentation."""
    start, end = span
    line_start = text.rfind("\n", 0, start) + 1
    if floor <= line_start < start and not text[line_start:start].strip(" \t"):
        return line_start, end
    return span


def _fit_spans(
    text: str, spans: list[Span], kind: str, counter: TokenCounter, limit: int, max_tokens: int
) -> tuple[list[Span], list[int]]:
    """Count every span with the real counter; split again the ones over `limit`."""
    counts = count_many(counter, [text[s:e] for s, e in spans])
    out: list[Span] = []
    out_counts: list[int] = []
    i = 0
    while i < len(spans):
        if counts[i] <= limit:
            out.append(spans[i])
            out_counts.append(counts[i])
            i += 1
            continue
        # Over the limit: split this span together with the next with the real counter, so
        # the remainder joins the next chunk instead of becoming a fragment of its own.
        start = spans[i][0]
        end = spans[i + 1][1] if i + 1 < len(spans) else spans[i][1]
        logger.debug(
            "chunk at offset %d counts %d > %d by %s: splitting it again with the counter",
            start,
            counts[i],
            limit,
            counter.name,
        )
        capacity = _char_capacity(spans[i][1] - spans[i][0], counts[i], limit)
        _refit(text, (start, end), kind, counter, limit, max_tokens, capacity, out, out_counts)
        i += 2
    return out, out_counts


def _refit(
    text: str,
    span: Span,
    kind: str,
    counter: TokenCounter,
    limit: int,
    max_tokens: int,
    capacity: int | None,
    out: list[Span],
    out_counts: list[int],
) -> None:
    """Split `span` again and append its pieces: in `capacity` characters when given (a piece
    still over the limit goes through here again, with the counter), else with the counter as
    the splitter's sizing, then longest fitting prefixes as the last resort."""
    start, end = span
    size = None if capacity is not None else counter.count
    for piece in _split(text[start:end], start, kind, size, capacity or limit):
        floor = out[-1][1] if out else 0
        for candidate in dict.fromkeys((_with_indent(text, piece, floor), piece)):
            count = counter.count(text[candidate[0] : candidate[1]])
            if count <= limit:
                out.append(candidate)
                out_counts.append(count)
                break
        else:
            if capacity is not None:
                _refit(text, piece, kind, counter, limit, max_tokens, None, out, out_counts)
                continue
            for part in _hard_split(text, piece, counter, limit, max_tokens):
                if not text[part[0] : part[1]].strip():
                    continue
                out.append(part)
                out_counts.append(counter.count(text[part[0] : part[1]]))


# ---------------------------------------------------------------- overlap
_WORD_START = re.compile(r"(?<=\s)\S")
_LINE_START = re.compile(r"(?<=\n)[ \t]*\S")  # a line that is not blank, with its indentation


def _tail_starts(text: str, start: int, end: int) -> list[list[int]]:
    """Candidate starts of a proper tail of text[start:end], by preference: lines, words,
    characters (a tail never repeats the whole previous chunk)."""
    piece = text[start:end]
    lines = [m.start() for m in _LINE_START.finditer(piece)]
    words = [m.start() for m in _WORD_START.finditer(piece)]
    return [[start + p for p in lines], [start + p for p in words], list(range(start + 1, end))]


def _add_overlap(
    text: str, spans: list[Span], counts: list[int], counter: TokenCounter, overlap: int, limit: int
) -> tuple[list[Span], list[int]]:
    """Start each chunk after the first with the longest tail of the previous chunk (at a line
    start, else a word start, else a character) of at most `overlap` tokens that keeps the
    chunk within `limit`."""
    out, out_counts = spans[:1], counts[:1]
    for (prev_start, prev_end), span, count in zip(spans, spans[1:], counts[1:], strict=False):
        chosen, chosen_count, found = span, count, False
        for starts in _tail_starts(text, prev_start, prev_end):
            # Tail counts shrink as the start moves right: find the first start that fits,
            # galloping from the end first (a tail is short: long prefixes are never counted).
            lo, hi, step = 0, len(starts), 1
            while step <= len(starts):
                if counter.count(text[starts[-step] : prev_end]) > overlap:
                    lo, hi = len(starts) - step + 1, len(starts) - step // 2
                    break
                hi, step = len(starts) - step, step * 2
            while lo < hi:
                mid = (lo + hi) // 2
                if counter.count(text[starts[mid] : prev_end]) <= overlap:
                    hi = mid
                else:
                    lo = mid + 1
            for p in starts[lo : lo + 8]:
                merged = counter.count(text[p : span[1]])
                if merged <= limit:
                    chosen, chosen_count, found = (p, span[1]), merged, True
                    break
            if found:
                break
        out.append(chosen)
        out_counts.append(chosen_count)
    return out, out_counts


# ---------------------------------------------------------------- the entry point
def chunk_text(
    text: str,
    *,
    max_tokens: int = 512,
    overlap: int = 0,
    counter: CounterSpec = None,
    kind: ChunkKind = "auto",
    path: str | os.PathLike[str] | None = None,
) -> list[TextChunk]:
    """Split `text` into chunks of at most `max_tokens` tokens each, at structural boundaries.

    Args:
        text: the text to split. Empty or whitespace-only text gives `[]`.
        max_tokens: the most tokens a chunk may count, by `counter` (>= 1).
        overlap: tokens of the previous chunk's end repeated at the start of each chunk
            (0 <= overlap < max_tokens). The tail starts at a line start where one fits,
            else at a word start, else at a character.
        counter: any spec `ragbudget.get_counter` accepts (default: the estimator).
        kind: 'markdown' (headings, then blocks), 'code' and 'text' (runs of blank lines, then
            lines, sentences, words), or 'auto' to decide from `path`'s suffix or the content.
        path: the file the text came from; only its name is used, to guess `kind`.

    Returns:
        The chunks in order. Whitespace between chunks belongs to none of them; a chunk that
        starts a line keeps that line's indentation. Every chunk's `tokens <= max_tokens`.

    Raises:
        ImportError: semantic-text-splitter is missing (`pip install 'ragbudget[split]'`).
        ValueError: a bad argument, or one character alone counts more than `max_tokens`.
    """
    _check_args(text, max_tokens, overlap, kind, path)
    tc = get_counter(counter)
    if not text.strip():
        return []
    _splitter_module()
    resolved = detect_kind(text, path) if kind == "auto" else kind
    body_limit = max_tokens - overlap
    capacity = _char_capacity(len(text), tc.count(text), body_limit)
    spans = _split(text, 0, resolved, None, capacity)
    floors = [0] + [end for _, end in spans[:-1]]
    spans = [_with_indent(text, span, floor) for span, floor in zip(spans, floors, strict=True)]
    spans, counts = _fit_spans(text, spans, resolved, tc, body_limit, max_tokens)
    if overlap and len(spans) > 1:
        spans, counts = _add_overlap(text, spans, counts, tc, overlap, max_tokens)
    return _to_chunks(text, spans, counts)


def _to_chunks(text: str, spans: Sequence[Span], counts: Sequence[int]) -> list[TextChunk]:
    line_starts = [0] + [m.end() for m in re.finditer("\n", text)]
    chunks = []
    for (start, end), tokens in zip(spans, counts, strict=True):
        chunks.append(
            TextChunk(
                text=text[start:end],
                start_line=bisect.bisect_right(line_starts, start),
                end_line=bisect.bisect_right(line_starts, max(start, end - 1)),
                start_index=start,
                end_index=end,
                tokens=tokens,
            )
        )
    return chunks
