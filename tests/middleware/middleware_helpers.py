"""Helpers for the TokenBudgetMiddleware tests: visible tokens, and walking `more` pages."""

from __future__ import annotations

import json
from typing import Any

from mcp_types import TextContent
from ragbudget import TokenCounter
from ragbudget.pages.remainder import find_more_call, join_pages


def texts(result: Any) -> list[str]:
    return [block.text for block in result.content if isinstance(block, TextContent)]


def visible(result: Any, counter: TokenCounter) -> int:
    """Tokens of every text block, counted one by one and summed (the middleware's rule)."""
    return sum(counter.count(text) for text in texts(result))


def next_call(notice: str) -> tuple[str, int] | None:
    """The `more(handle, offset)` a notice asks for, if any."""
    return find_more_call(notice)


async def pages_after(
    client: Any, first: Any, counter: TokenCounter, budget: int
) -> tuple[list[str], int]:
    """Every continuation page body after `first` (each checked within `budget`), and how many
    `more` calls it took."""
    call = next_call(texts(first)[-1])
    assert call is not None, texts(first)[-1]
    bodies: list[str] = []
    while call is not None:
        handle, offset = call
        page = await client.call_tool("more", {"handle": handle, "offset": offset})
        assert visible(page, counter) <= budget
        body, notice = texts(page)
        bodies.append(body)
        call = next_call(notice)
    return bodies, len(bodies)


async def whole_json(client: Any, first: Any, counter: TokenCounter, budget: int) -> Any:
    """The whole JSON result put back together from `first` and its pages (each must parse)."""
    bodies, _ = await pages_after(client, first, counter, budget)
    return join_pages(json.loads(texts(first)[0]), [json.loads(body) for body in bodies])


async def whole_text(client: Any, first: Any, counter: TokenCounter, budget: int) -> str:
    bodies, _ = await pages_after(client, first, counter, budget)
    return "".join([texts(first)[0], *bodies])
