"""Tool errors an agent can act on, and that fit the call's budget like any other answer."""

from __future__ import annotations

import logging

from fastmcp.exceptions import ToolError
from ragbudget.counters import TokenCounter
from ragbudget.fitting import cut_text
from ragbudget.text import counted

__all__ = ["BUDGET_ADVICE", "ELLIPSIS", "fit_message", "refuse"]

ELLIPSIS = "…"

BUDGET_ADVICE = "use max_tokens >="
"""Ends the one error that is never cut: the budget is below the smallest possible answer."""


def fit_message(message: str, budget: int, counter: TokenCounter) -> str:
    """`message`, or its longest prefix (at a word where one is near) plus `…` that counts at
    most `budget` tokens, by the budget primitive; '' when not even `…` fits."""
    if counter.count(message) <= budget:
        return message
    fitted = cut_text(message, budget, counter, render=lambda kept: kept + ELLIPSIS)
    return "" if fitted is None else fitted.text


def refuse(
    exc: Exception, budget: int | None = None, counter: TokenCounter | None = None
) -> ToolError:
    """A caller's mistake as a tool error whose message is the advice (WARNING on stderr).

    With `budget` and `counter`, the message is cut to fit `budget` tokens: every answer of a
    budgeted tool, errors included, stays within the call's (clamped) `max_tokens`. The one
    exception is the error saying that `budget` is below the smallest answer the call can
    have: it is whole, since the budget it advises is the point. So is the error a budget too
    small to hold a word of the message gets (`max_tokens=1` and an `offset` past the end):
    it says which budget shows the message whole, rather than an empty or `…` error.
    """
    message = str(exc)
    if budget is not None and counter is not None and BUDGET_ADVICE not in message:
        cut = fit_message(message, budget, counter)
        if cut in ("", ELLIPSIS):
            whole = counter.count(message)
            cut = (
                f"max_tokens={budget} cannot hold this error's message "
                f"({counted(whole, 'token')}); "
                f"{BUDGET_ADVICE} {whole}"
            )
        message = cut
    return ToolError(message, log_level=logging.WARNING)
