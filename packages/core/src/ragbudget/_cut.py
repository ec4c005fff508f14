"""Cutting one text to a token limit with a visible marker: `fitting.cut_text` with a marker."""

from __future__ import annotations

from ragbudget.budget import with_marker
from ragbudget.counters import TokenCounter
from ragbudget.fitting import Fitted, cut_text

__all__ = ["cut_to_tokens", "cut_with_marker"]


def cut_with_marker(
    text: str, limit: int, counter: TokenCounter, marker: str, suffix: str = ""
) -> Fitted | None:
    """`text` cut at the best boundary, trailing space dropped, `marker` appended, counting at
    most `limit` tokens with `suffix` (a separator that follows it); `size` is the cut
    position. None when not even the marker fits."""

    return cut_text(text, limit, counter, render=lambda kept: with_marker(kept, marker) + suffix)


def cut_to_tokens(text: str, limit: int, counter: TokenCounter, marker: str = "") -> str | None:
    """`text` cut at a paragraph/sentence/line/word boundary (else a character) plus `marker`,
    counting at most `limit` tokens with the marker; None when not even the marker fits.

    The same cut `fit()` applies to an oversized chunk (a boundary is used when it keeps at
    least 70% of what fits). `counter` is a TokenCounter (see `get_counter`); for the cut
    position as well, use `ragbudget.fitting.cut_text`.
    """
    fitted = cut_with_marker(text, limit, counter, marker)
    return None if fitted is None else fitted.text
