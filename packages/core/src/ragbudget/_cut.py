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
    """A long n with count(text[:n] + suffix) <= limit (0 if none), found with few counts of
    prefixes near the answer: secant steps on the measured ratio, then bisection down to 1% (the
    cut then moves back to a boundary anyway, so finer precision would buy nothing)."""
    # No real tokenizer makes a token of more than a few dozen characters, so the answer lies
    # below this bound; past it, counting would only read text that cannot fit.
    n_max = min(len(text), (limit + 1) * 64)
    base = counter.count(suffix)
    lo, hi = 0, n_max  # lo always fits; the answer is in [lo, hi]
    guess = min(n_max, max(1, limit * 4))
    for _ in range(4):
        used = counter.count(text[:guess] + suffix)
        if used <= limit:
            lo = guess
            if guess == hi or used >= limit - max(1, limit // 100):
                return guess
        else:
            hi = guess - 1
        if lo >= hi:
            return lo
        per_char = max(used - base, 1) / guess
        guess = int((limit - base) / per_char * 0.99)
        guess = min(max(guess, lo + 1), hi)
    while hi - lo > max(16, lo // 100):
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
