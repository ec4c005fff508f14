"""`LargestCounter`: the larger of several counters' counts, and the `exact` spec built on it.

The default estimate promises a count at or above both `cl100k_base`'s and `o200k_base`'s, on
any text, within a margin; text crafted against its model can still fool it. The `exact` spec
(`get_counter("exact")`) keeps the same promise with no margin and no exception: the larger of
the two encodings' exact counts, by `bpe-openai` (`pip install 'ragbudget[bpe]'`, its data in
the wheel, so it works offline), else by tiktoken. Counting both with `bpe-openai` takes about
half the time the estimate takes on the standard library's sources (docs/counters.md).
"""

from __future__ import annotations

from typing import Any

__all__ = ["LargestCounter", "default_spec"]


def default_spec() -> str:
    """The counter spec of the guarded surfaces (the middleware, `ragbudget serve`, the guard)
    when none is given: `"exact"` when bpe-openai is installed, else `"estimate"` (which they
    count with its margin). The library's own default (`get_counter(None)`) stays the estimate:
    the core depends on pydantic alone."""
    from ragbudget.bpe import bpe_available

    return "exact" if bpe_available() else "estimate"


def _up_to(counter: Any, text: str, limit: int) -> int:
    method = getattr(counter, "count_up_to", None)
    return int(method(text, limit)) if method is not None else int(counter.count(text))


class LargestCounter:
    """The largest of several counters' counts: within a budget by this counter means within
    it by each of them.

    Key init args:
        counters: two or more `TokenCounter`s.
        name: what `TruncationInfo.counter` reports.

    Instantiate:
        ```python
        from ragbudget import get_counter

        counter = get_counter("exact")  # cl100k_base and o200k_base, the larger count
        ```
    """

    def __init__(self, *counters: Any, name: str) -> None:
        if len(counters) < 2:
            msg = f"counters: LargestCounter needs at least two counters, got {len(counters)}"
            raise ValueError(msg)
        self.counters = counters
        self.name = name
        self.exact = all(bool(getattr(c, "exact", False)) for c in counters)
        self.stops_early = all(bool(getattr(c, "stops_early", False)) for c in counters)

    def count(self, text: str) -> int:
        return max(int(c.count(text)) for c in self.counters)

    def count_up_to(self, text: str, limit: int) -> int:
        """`count(text)` when it is at most `limit`, else a number above `limit`; stops at the
        first counter past the limit, and each counter that can stops reading there."""
        most = 0
        for counter in self.counters:
            tokens = _up_to(counter, text, limit)
            if tokens > limit:
                return tokens
            most = max(most, tokens)
        return most

    def __repr__(self) -> str:
        inner = ", ".join(repr(c) for c in self.counters)
        return f"LargestCounter({inner}, name={self.name!r})"
