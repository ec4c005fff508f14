"""Tool errors an agent can act on, and that fit the call's budget like any other answer."""

from __future__ import annotations

import logging

from fastmcp.exceptions import ToolError

from ragbudget.counters import TokenCounter

__all__ = ["BUDGET_ADVICE", "ELLIPSIS", "fit_message", "refuse"]

ELLIPSIS = "…"

BUDGET_ADVICE = "use max_tokens >="
"""Ends the one error that is never cut: the budget is below the smallest possible answer."""


def fit_message(message: str, budget: int, counter: TokenCounter) -> str:
    """`message`, or its longest prefix plus `…` that counts at most `budget` tokens.

    Error messages are a few hundred characters at most (caller input in them is shortened
    by `ragbudget._shown.shown`), so a binary search over the prefix length is cheap.
    """
    if counter.count(message) <= budget:
        return message
    low, high = 0, len(message)  # the longest prefix that fits lies in [low, high)
    while low + 1 < high:
        mid = (low + high) // 2
        if counter.count(message[:mid] + ELLIPSIS) <= budget:
            low = mid
        else:
            high = mid
    cut = message[:low] + ELLIPSIS
    return cut if counter.count(cut) <= budget else ""


def refuse(
    exc: Exception, budget: int | None = None, counter: TokenCounter | None = None
) -> ToolError:
    """A caller's mistake as a tool error whose message is the advice (WARNING on stderr).

    With `budget` and `counter`, the message is cut to fit `budget` tokens: every answer of a
    budgeted tool, errors included, stays within the call's (clamped) `max_tokens`. The one
    exception is the error saying that `budget` is below the smallest answer the call can
    have: it is whole, since the budget it advises is the point.
    """
    message = str(exc)
    if budget is not None and counter is not None and BUDGET_ADVICE not in message:
        message = fit_message(message, budget, counter)
    return ToolError(message, log_level=logging.WARNING)
