"""Counters for models without a published tokenizer, and safety margins: a counter scaled up.

Anthropic publishes no tokenizer for Claude 3 and later; its own advice is to estimate and
keep a buffer. The `claude` preset is ragbudget's default estimate (safe for both cl100k and
o200k) times `CLAUDE_FACTOR`: Claude 3.x tokenizers are reported to need 1.2-1.3x o200k's
tokens, and Anthropic says its newest tokenizer uses up to 1.35x more than the previous one,
so 1.3 x 1.35 = 1.755 bounds both. It is an estimate (`exact=False`), on the safe side.
"""

from __future__ import annotations

import math

from ragbudget.counters import TokenCounter

__all__ = ["CLAUDE_FACTOR", "ScaledCounter", "claude_counter"]

CLAUDE_FACTOR = 1.755
"""Claude's tokens per o200k token, at most, as published (1.3 for Claude 3.x, times 1.35)."""


class ScaledCounter:
    """`ceil(base.count(text) * factor)`: a counter for a heavier tokenizer, or with a margin.

    Key init args:
        base: the counter to scale (an estimate, or a real tokenizer of a lighter model).
        factor: how many times more tokens to count (>= 1).
        name: what `TruncationInfo.counter` and responses report.

    Use:
        ```python
        from ragbudget import get_counter

        claude = get_counter("claude")  # the default estimate x 1.755
        ```
    """

    exact = False

    def __init__(self, base: TokenCounter, factor: float, name: str) -> None:
        if isinstance(factor, bool) or not isinstance(factor, int | float) or not factor >= 1:
            msg = f"factor must be a number >= 1, got {factor!r}"
            raise ValueError(msg)
        self.base, self.factor, self.name = base, float(factor), name

    def count(self, text: str) -> int:
        return math.ceil(self.base.count(text) * self.factor)

    def __repr__(self) -> str:
        return f"ScaledCounter({self.base!r}, {self.factor}, {self.name!r})"


def claude_counter() -> ScaledCounter:
    """The `claude` preset: the default estimate times `CLAUDE_FACTOR`."""
    from ragbudget.counters import EstimateCounter

    return ScaledCounter(EstimateCounter(), CLAUDE_FACTOR, "claude")
