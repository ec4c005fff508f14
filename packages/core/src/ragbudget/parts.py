"""A rendering of parts, counted as the sum of its parts: the plugins' budget under `select`.

`evidence.select` measures a rendering whole. The plugins promise more: each returned
Document or node, rendered alone (plus its separator), has a count, and those counts sum to
at most the budget. `PartsCounter` gives `select` that measure: the plugin's render joins the
parts with a sentinel character that none of them holds, and the counter sums the parts'
counts (each distinct part counted once per call).
"""

from __future__ import annotations

from collections.abc import Iterable

from ragbudget.counters import TokenCounter

__all__ = ["PartsCounter"]

_SENTINELS = ("\x1e", "\x1f", "\ue000", "\ue001", "\ufdd0", "\ufdd1")


class PartsCounter:
    """Counts `join(parts)` as the sum of the parts' counts by `inner`.

    `texts` are what the parts are made of (the renderings, separators included): the
    sentinel is the first of a few control and private-use characters that none holds.
    """

    def __init__(self, inner: TokenCounter, texts: Iterable[str]) -> None:
        seen = list(texts)
        free = [s for s in _SENTINELS if not any(s in t for t in seen)]
        if not free:
            msg = "the texts hold every separator character PartsCounter can use"
            raise ValueError(msg)
        self.sentinel = free[0]
        self.inner = inner
        self.name = inner.name
        self.exact = inner.exact
        self._memo: dict[str, int] = {}

    def join(self, parts: Iterable[str]) -> str:
        """The parts as one string that `count` measures part by part."""
        return self.sentinel.join(parts)

    def count(self, text: str) -> int:
        """The sum of the counts of `text`'s parts (0 for the empty rendering)."""
        if not text:
            return 0
        return sum(self.part(p) for p in text.split(self.sentinel))

    def part(self, text: str) -> int:
        """The count of one part (remembered)."""
        n = self._memo.get(text)
        if n is None:
            n = self._memo[text] = self.inner.count(text)
        return n
