"""What an agent's model reads of a cut tool result: a first page and a notice naming the call
that reads on, then each next page and its notice, every one within the same budget.

The agent integrations (LangChain's `ToolResultBudgetMiddleware`, LlamaIndex's `ToolBudget`)
keep the result where their framework keeps state and call these, so both say the same thing
in the same words: `[ragbudget: result cut to fit 8,000 tokens; showing lines 1-131 of 48,210
(...). Call read_more(handle="...") for the next page.]`, then `[ragbudget: grep result,
characters 19,758-39,511 of 3,212,904. Next page: read_more(handle="...").]`, until "This is
the last page.".
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from ragbudget.counters import TokenCounter, count_up_to
from ragbudget.limits import Walls
from ragbudget.pages.json_trim import path_label
from ragbudget.pages.remainder import UNIT_NAMES, Page, Remainder, first_page

__all__ = [
    "CONTINUATION_DESCRIPTION",
    "MIN_MAX_TOKENS",
    "BudgetSize",
    "budget_tokens",
    "first_notice",
    "first_page_with_notice",
    "next_page_with_notice",
    "page_notice",
    "read_size",
]

MIN_MAX_TOKENS = 128
"""The smallest budget: room for a page and the notice that says how to read on."""

CONTINUATION_DESCRIPTION = (
    "Read the next page of a tool result that was cut to fit the context. "
    "Pass the handle its notice gives; each call returns the next page, until "
    "the last. Text pages are the next lines; JSON pages are objects naming the "
    "`path` they continue, the `start` index and the next `items`, `text` or "
    "`entries`. Read one page of a handle at a time."
)
"""What the continuation tool (`read_more`) tells the model it does."""

RETRIES = 4
"""Attempts at a page whose notice fits beside it (each reserves what the last one missed)."""

BudgetSize = int | tuple[Literal["tokens"], int] | tuple[Literal["fraction"], float]
"""A budget as the integrations take it: tokens, `("tokens", n)`, or `("fraction", f)` of the
model's context window."""


def budget_tokens(max_tokens: BudgetSize, window: int | None, missing_window: str) -> int:
    """`max_tokens` as tokens: an int, `("tokens", n)`, or `("fraction", f)` of `window`, the
    model's context window (None: unknown, and `missing_window` is the error that says how to
    give it). A TypeError or ValueError names `max_tokens` and what to do."""
    if isinstance(max_tokens, tuple) and len(max_tokens) == 2 and max_tokens[0] == "fraction":
        fraction = max_tokens[1]
        if isinstance(fraction, bool) or not isinstance(fraction, (int, float)):
            msg = f"max_tokens: the fraction must be a number, got {fraction!r}"
            raise TypeError(msg)
        if not 0 < fraction <= 1:
            msg = f"max_tokens: the fraction must be > 0 and <= 1, got {fraction}"
            raise ValueError(msg)
        if window is None:
            raise ValueError(missing_window)
        tokens: Any = int(window * fraction)
    elif isinstance(max_tokens, tuple) and len(max_tokens) == 2 and max_tokens[0] == "tokens":
        tokens = max_tokens[1]
    else:
        tokens = max_tokens
    if isinstance(tokens, bool) or not isinstance(tokens, int):
        msg = f"max_tokens must be an int, ('tokens', n) or ('fraction', f), got {max_tokens!r}"
        raise TypeError(msg)
    if tokens < MIN_MAX_TOKENS:
        msg = f"max_tokens must be >= {MIN_MAX_TOKENS} tokens (room for a page and its notice), "
        msg += f"got {tokens:,}"
        raise ValueError(msg)
    return tokens


def read_size(text: str, budget: int, counter: TokenCounter) -> int:
    """Tokens in `text`, or more than `budget` when over (no token is longer than 64
    characters, so a long text need not be counted to know)."""
    if len(text) > (budget + 1) * 64:
        return budget + 1
    return count_up_to(counter, text, budget)


def _lines(text: str) -> int:
    return text.count("\n") + (0 if text.endswith("\n") else 1)


def first_notice(text: str, body: str, remainder: Remainder, call: str, budget: int) -> str:
    """The notice after a first page `body` of `text`: what was kept of how much, and `call`,
    the continuation call that reads on."""
    if remainder.segments and remainder.segments[0].path is None:
        what = (
            f"showing lines 1-{_lines(body):,} of {_lines(text):,} "
            f"({len(body):,} of {len(text):,} characters)"
        )
    else:
        shown = "; ".join(
            f"{path_label(s.path or ())} kept {s.start:,} of {s.total:,} {UNIT_NAMES[s.kind]}"
            for s in remainder.segments[:3]
        )
        more = len(remainder.segments) - 3
        what = f"the JSON is valid but shortened: {shown}" + (
            f"; and {more} more cuts" if more > 0 else ""
        )
    return (
        f"[ragbudget: result cut to fit {budget:,} tokens; {what}. Call {call} for the next page.]"
    )


def page_notice(tool: str, page: Page, call: str | None) -> str:
    """The notice after a continuation page of `tool`'s result: the units it holds, and
    `call` for the next page (None: this is the last)."""
    segment = page.segment
    where = "" if segment.path is None else f" of {path_label(segment.path)}"
    shown = f"{UNIT_NAMES[segment.kind]} {page.first:,}-{page.last - 1:,} of "
    shown += f"{segment.total:,}{where}"
    follow = "This is the last page." if call is None else f"Next page: {call}."
    return f"[ragbudget: {tool} result, {shown}. {follow}]"


def first_page_with_notice(
    text: str,
    budget: int,
    counter: TokenCounter,
    call: str,
    *,
    value: Any = None,
    tool: str = "",
) -> tuple[str, Remainder, int] | None:
    """The first page of `text` with its notice (naming `call`) within `budget` tokens, the
    remainder, and the tokens used; None when no page fits beside its notice (only a counter
    far from additive gets there). `value`: the JSON list or object `text` holds, to cut as
    JSON."""
    reserve = 96
    for attempt in range(RETRIES):
        body, remainder = first_page(
            text,
            max(1, budget - reserve),
            counter,
            value=value,
            walls=Walls(budget),
            tool=tool,
        )
        notice = first_notice(text, body, remainder, call, budget)
        content = f"{body}\n\n{notice}"
        used = read_size(content, budget, counter)
        if used <= budget:
            return content, remainder, used
        notice_units = read_size(notice, budget, counter)
        reserve = max(reserve + used - budget, notice_units + 8 * (attempt + 1))
    return None  # pragma: no cover - only a counter far from additive gets here


def next_page_with_notice(
    remainder: Callable[[], Remainder],
    offset: int,
    budget: int,
    counter: TokenCounter,
    call: str,
) -> tuple[str, Page, Remainder] | None:
    """The page at `offset` with its notice (naming `call` when another page follows) within
    `budget` tokens, the page, and the remainder it was cut from (its segments may have grown:
    keep them); None when no page fits beside its notice. `remainder` builds the remainder
    afresh for each attempt, as a page that meets an oversized item adds segments."""
    reserve = 60
    for attempt in range(RETRIES):
        rest = remainder()
        page = rest.page(offset, max(1, budget - reserve), counter)
        notice = page_notice(rest.tool, page, None if page.next_offset is None else call)
        content = f"{page.body}\n\n{notice}"
        used = read_size(content, budget, counter)
        if used <= budget:
            return content, page, rest
        reserve = max(
            reserve + used - budget, read_size(notice, budget, counter) + 8 * (attempt + 1)
        )
    return None  # pragma: no cover - only a counter far from additive gets here
