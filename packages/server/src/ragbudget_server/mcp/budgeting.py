"""The server's side of the budget: the ceiling, and a last check of what the model will read.

The store budgets its own rendering and reports the count it measured
(`SearchResponse.measured()`); the server checks that count against the call's budget once,
before sending, without counting again. The check cannot fire silently: were the store ever to
overshoot, the call fails with an error (logged at ERROR) instead of sending an over-budget
result. This is the one check of the budget: the count then goes with the result to the
server's `TokenBudgetMiddleware` (`ServerState.measured`), which does not count it again.
"""

from __future__ import annotations

import logging
from typing import Protocol

from ragbudget.counters import TokenCounter
from ragbudget.errors import RagbudgetError

__all__ = ["BudgetExceededError", "checked_text", "clamp_budget"]

logger = logging.getLogger(__name__)


class Rendered(Protocol):
    """A store response: what it renders for the model, and what the store measured of it."""

    def to_text(self) -> str: ...

    def measured(self) -> tuple[str, int] | None: ...


class BudgetExceededError(RagbudgetError, ValueError):
    """A response over its budget reached the server's last check: a bug, never sent."""


def clamp_budget(requested: int, ceiling: int) -> tuple[int, str | None]:
    """The budget a call gets and, when the ask was above `ceiling`, the notice saying so."""
    if requested <= ceiling:
        return requested, None
    notice = (
        f"[max_tokens={requested:,} is above this server's ceiling; clamped to {ceiling:,} tokens]"
    )
    return ceiling, notice


def checked_text(response: Rendered, budget: int, counter: TokenCounter) -> tuple[str, int]:
    """The text the model will read and its token count, checked against `budget`.

    Uses the store's own measure when it has one (counted once, by the same counter), else
    counts `to_text()`.

    Raises:
        BudgetExceededError: the text is over the budget (logged at ERROR: a store bug).
    """
    measured = response.measured()
    if measured is None:
        text = response.to_text()
        measured = (text, counter.count(text))
    text, used = measured
    if used > budget:
        msg = (
            f"the response counts {used:,} tokens by {counter.name}, over its {budget:,}-token "
            "budget; it was not sent (please report this as a ragbudget bug)"
        )
        logger.error(msg)
        raise BudgetExceededError(msg)
    return text, used
