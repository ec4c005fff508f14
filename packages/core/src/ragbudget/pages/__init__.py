"""Cutting a tool result to a first page within a budget, and serving the rest page by page.

Framework-free (the core's dependencies only): the FastMCP middleware (`ragbudget.middleware`)
and the LangChain agent middleware (`langchain_ragbudget.agents`) both cut with it. A text is
cut after a line; a JSON list or object is shortened by trailing items, characters and, as a
last resort, keys at any depth, so every page parses and keeps its shape. What the first page
left out is a `Remainder`: its pages, each within the budget, join back to the exact result
(`join_pages`); `to_dict` / `from_dict` keep it as plain JSON values, and `PageCache` keeps
remainders in memory, bounded in entries, characters, bytes and time. `first_page_with_notice`
and `next_page_with_notice` (`ragbudget.pages.reading`) give the pages an agent reads, each with
the notice that names the call reading on, in the words both agent integrations use.

    from ragbudget import get_counter
    from ragbudget.pages import first_page, join_pages, parse_json

    counter = get_counter("exact")
    shown, rest = first_page(text, 2_000, counter, value=parse_json(text))
    page = rest.page(0, 2_000, counter)  # page.body, then page.next_offset (None: the last)
"""

from __future__ import annotations

from ragbudget.pages.cache import PageCache
from ragbudget.pages.json_trim import Cut, dumps, parse_json, trim
from ragbudget.pages.reading import (
    BudgetSize,
    budget_tokens,
    first_notice,
    first_page_with_notice,
    next_page_with_notice,
    page_notice,
    read_size,
)
from ragbudget.pages.remainder import (
    UNIT_NAMES,
    Page,
    Remainder,
    Segment,
    first_page,
    join_pages,
)

__all__ = [
    "UNIT_NAMES",
    "BudgetSize",
    "Cut",
    "Page",
    "PageCache",
    "Remainder",
    "Segment",
    "budget_tokens",
    "dumps",
    "first_notice",
    "first_page",
    "first_page_with_notice",
    "join_pages",
    "next_page_with_notice",
    "page_notice",
    "parse_json",
    "read_size",
    "trim",
]
