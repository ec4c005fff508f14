"""Measuring what a model may read of a result against walls, by real tokenizers."""

from __future__ import annotations

from typing import Any

from mcp_types import TextContent
from ragbudget import get_counter
from ragbudget.limits import Walls
from ragbudget.pages.json_trim import dumps
from ragbudget.pages.remainder import find_more_call

REAL = (get_counter("tiktoken:o200k_base"), get_counter("tiktoken:cl100k_base"))
"""The exact tokenizers every result is measured with."""


def readable(result: Any) -> list[str]:
    """What a model may read: each text block, and the structured content as sent."""
    parts = [b.text for b in result.content if isinstance(b, TextContent)]
    if result.structured_content is not None:
        parts.append(dumps(result.structured_content))
    return parts


def over(result: Any, walls: Walls) -> list[str]:
    """Each wall the result is over (tokens by o200k and cl100k, characters, bytes)."""
    parts = readable(result)
    found = []
    for counter in REAL:
        tokens = sum(counter.count(part) for part in parts)
        if tokens > walls.tokens:
            found.append(f"{counter.name}: {tokens:,} > {walls.tokens:,}")
    chars = sum(len(part) for part in parts)
    if walls.chars is not None and chars > walls.chars:
        found.append(f"chars: {chars:,} > {walls.chars:,}")
    size = sum(len(part.encode()) for part in parts)
    if walls.bytes is not None and size > walls.bytes:
        found.append(f"bytes: {size:,} > {walls.bytes:,}")
    return found


async def read_all(client: Any, first: Any, walls: Walls) -> list[str]:
    """Every continuation page's body after `first`, each checked within `walls`."""
    texts = [b.text for b in first.content if isinstance(b, TextContent)]
    call, bodies = find_more_call(texts[-1]), []
    while call is not None:
        page = await client.call_tool("more", {"handle": call[0], "offset": call[1]})
        assert over(page, walls) == []
        body, notice = readable(page)
        bodies.append(body)
        call = find_more_call(notice)
    return bodies
