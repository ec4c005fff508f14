"""Cutting one text to a token limit at the best boundary, never over the limit."""

from __future__ import annotations

import re

from ragbudget.counters import TokenCounter

__all__ = ["cut_to_tokens", "snap_to_boundary"]

# Boundary kinds in order of preference. A cut position is the index just after the boundary.
_BOUNDARIES: tuple[re.Pattern[str], ...] = (
    re.compile(r"\n[ \t]*\n"),  # paragraph
    re.compile(r"[.!?][\"')\]]*(?=\s)|[。！？]"),  # sentence
    re.compile(r"\n"),  # line
    re.compile(r"\s"),  # word
)
# A boundary is used only if it keeps at least this share of what would fit.
_MIN_KEEP = 0.7


def _fits(counter: TokenCounter, text: str, limit: int) -> bool:
    return counter.count(text) <= limit


def _longest_fitting_prefix(text: str, suffix: str, limit: int, counter: TokenCounter) -> int:
    """Largest n (by bisection) with count(text[:n] + suffix) <= limit; 0 if none fits."""
    # No real tokenizer makes a token of more than a few dozen characters, so the answer lies
    # well below this bound; past it, bisection would only count text that cannot fit.
    lo, hi = 0, min(len(text), (limit + 1) * 64)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if _fits(counter, text[:mid] + suffix, limit):
            lo = mid
        else:
            hi = mid - 1
    return lo


def snap_to_boundary(text: str, end: int) -> int:
    """Move `end` back to the best boundary that keeps at least _MIN_KEEP of it."""
    if end >= len(text):
        return end
    floor = int(end * _MIN_KEEP)
    window = text[:end]
    for pattern in _BOUNDARIES:
        best = -1
        for match in pattern.finditer(window, floor):
            best = match.end()
        if best > floor:
            return best
    return end


def cut_to_tokens(text: str, limit: int, counter: TokenCounter, marker: str = "") -> str | None:
    """`text` cut at a paragraph/sentence/line/word boundary (else a character) plus `marker`,
    counting at most `limit` tokens with the marker; None when not even the marker fits.

    The same cut `fit()` applies to an oversized chunk (a boundary is used when it keeps at
    least 70% of what fits). `counter` is a TokenCounter (see `get_counter`).
    """
    if not _fits(counter, marker, limit):
        return None
    end = _longest_fitting_prefix(text, marker, limit, counter)
    end = snap_to_boundary(text, end)
    while end > 0:
        candidate = text[:end].rstrip() + marker
        if _fits(counter, candidate, limit):
            return candidate
        end -= max(1, end // 20)  # a tokenizer that is not monotone: back off and re-check
    return marker.lstrip()
