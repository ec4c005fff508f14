"""The server's side of the budget: the ceiling, and a last check of what the model will read.

The store already guarantees `counter.count(response.to_text()) <= max_tokens`. The server
counts the final text once more before sending it (the MCP server is the last step before the
model, and a protocol-visible overflow is the one failure this project exists to prevent). If
the store ever overshoots, the server asks again with the budget lowered by the overshoot, and
gives up with an error rather than send an over-budget result.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Protocol, TypeVar

from ragbudget.counters import TokenCounter

__all__ = ["BudgetExceededError", "clamp_budget", "fit_text"]

logger = logging.getLogger(__name__)

RETRIES = 3


class Rendered(Protocol):
    """A store response: what it renders for the model."""

    def to_text(self) -> str: ...


R = TypeVar("R", bound=Rendered)


class BudgetExceededError(ValueError):
    """No response within the budget could be produced."""


def clamp_budget(requested: int, ceiling: int) -> tuple[int, str | None]:
    """The budget a call gets and, when the ask was above `ceiling`, the notice saying so."""
    if requested <= ceiling:
        return requested, None
    notice = (
        f"[max_tokens={requested:,} is above this server's ceiling; clamped to {ceiling:,} tokens]"
    )
    return ceiling, notice


def fit_text(
    fetch: Callable[[int], R],
    budget: int,
    counter: TokenCounter,
    *,
    retry_errors: tuple[type[Exception], ...] = (ValueError,),
) -> tuple[R, str, int]:
    """`fetch(budget)`, checked: its text counts at most `budget` tokens by `counter`.

    Blocking (it runs the store call and the count); call it from a worker thread. When the
    store overshoots, `fetch` is called again with the budget lowered by the overshoot; if that
    fails too (or raises one of `retry_errors`, e.g. "too small for an empty response"), the
    error names the caller's budget and the smallest size seen, so the advice is usable.

    Raises:
        BudgetExceededError: no fitting text; the message says which max_tokens to ask for.
        Whatever the first `fetch(budget)` raises (the store's `StoreError` for bad arguments).
    """
    target, smallest = budget, 0
    for attempt in range(RETRIES):
        try:
            response = fetch(target)
        except retry_errors:
            if attempt == 0:
                raise
            break
        text = response.to_text()
        used = counter.count(text)
        if used <= budget:
            return response, text, used
        logger.warning(
            "the store rendered %d tokens for a %d-token budget (asked %d); asking again",
            used,
            budget,
            target,
        )
        smallest = used if not smallest else min(smallest, used)
        target -= used - budget
        if target < 1:
            break
    msg = (
        f"max_tokens={budget:,} cannot hold this response (the smallest measured "
        f"{smallest:,} tokens by {counter.name}); use max_tokens >= {smallest}"
    )
    raise BudgetExceededError(msg)
