"""`CountMemo`: one tool call's counts, each text counted once.

Cutting one result counts the same texts more than once: the page search counts candidate
pages (with their structured mirror), the final check counts the chosen page and its mirror
again, and the notice's "which wall bound" measures them a third time. A guard counts through a
`CountMemo` made for its call, so a text already counted is not read again: an exact count is
reused, and a count that stopped past a limit answers any fits-check at or below that limit.
"""

from __future__ import annotations

from ragbudget.counters import TokenCounter, count_up_to, stops_early

__all__ = ["MEMO_MIN_CHARS", "CountMemo"]

MEMO_MIN_CHARS = 2_000
"""Shorter texts are counted again (cheaper than keeping them)."""

_MAX_ENTRIES = 32


class CountMemo:
    """`inner`'s counts of the longer texts seen, for the life of one tool call."""

    def __init__(self, inner: TokenCounter) -> None:
        self.inner = inner
        self.name = inner.name
        self.exact = inner.exact
        self._known: dict[str, tuple[int, bool]] = {}
        """Text -> (count, whole): whole False when counting stopped past a limit (a floor)."""

    @property
    def stops_early(self) -> bool:
        return stops_early(self.inner)

    def _keep(self, text: str, tokens: int, whole: bool) -> None:
        if len(self._known) >= _MAX_ENTRIES:
            del self._known[next(iter(self._known))]
        self._known[text] = (tokens, whole)

    def count(self, text: str) -> int:
        if len(text) < MEMO_MIN_CHARS:
            return self.inner.count(text)
        known = self._known.get(text)
        if known is not None and known[1]:
            return known[0]
        tokens = self.inner.count(text)
        self._keep(text, tokens, True)
        return tokens

    def count_up_to(self, text: str, limit: int) -> int:
        """`count(text)` when at most `limit`, else a number above `limit`."""
        if len(text) < MEMO_MIN_CHARS:
            return count_up_to(self.inner, text, limit)
        known = self._known.get(text)
        if known is not None and (known[1] or known[0] > limit):
            return known[0]
        tokens = count_up_to(self.inner, text, limit)
        self._keep(text, tokens, tokens <= limit or not stops_early(self.inner))
        return tokens

    def __repr__(self) -> str:
        return f"CountMemo({self.inner!r})"
