"""The continuation tool: `more(handle, offset)` serves the pages a cut result left out.

Its description states how long a handle lives (the page cache's TTL since last use, as MCP
2026-07-28 asks of tools that hand out handles); an unknown or expired handle is a tool error
that says to call the original tool again. A server's own tool with the same name is never
silently replaced: the middleware refuses to list or call tools until the continuation tool
is given a free name (`ContinuationNameTaken`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Annotated

import anyio.to_thread
from fastmcp import FastMCP
from fastmcp.exceptions import ToolError
from fastmcp.server.providers import Provider
from fastmcp.tools import Tool, ToolResult
from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR, TextContent, ToolAnnotations
from pydantic import Field

from ragbudget.counters import TokenCounter
from ragbudget.limits import WalledCounter, Walls
from ragbudget.middleware.outcome import RETRIES
from ragbudget.pages.cache import PageCache, describe_ttl
from ragbudget.pages.json_trim import path_label
from ragbudget.pages.remainder import UNIT_NAMES, Page, Remainder, more_call

__all__ = ["ContinuationNameTaken", "check_name_free", "make_more_tool", "serve_page"]

logger = logging.getLogger(__name__)


class ContinuationNameTaken(MCPError):
    """The wrapped server has a tool named like the continuation tool: listing its tools is
    refused with this error (an MCP internal error whose message says what to do)."""

    def __init__(self, message: str) -> None:
        super().__init__(INTERNAL_ERROR, message)


def _name_taken(name: str) -> str:
    return (
        f"this server has its own tool named {name!r}, which TokenBudgetMiddleware's "
        f"continuation tool would replace: pass more_tool='<a free name>' to "
        f"TokenBudgetMiddleware (or rename the server's tool)"
    )


async def check_name_free(server: FastMCP | None, name: str, *, calling: bool = False) -> None:
    """Refuse a `server` that has a tool of its own named `name`: `ContinuationNameTaken` when
    listing tools, a `ToolError` when `calling` that name. Logged at ERROR for the server's
    author."""
    if server is None:
        return
    own = await Provider.get_tool(server, name)  # the server's tools, without injected ones
    if own is None:
        return
    message = _name_taken(name)
    logger.error("%s", message)
    if calling:
        raise ToolError(message)
    raise ContinuationNameTaken(message)


def _description(cache: PageCache[Remainder]) -> str:
    return (
        "Continue a tool result that was cut to fit the client's limits, one page at a time. "
        "Pages of a text result are its next lines; pages of a JSON result are JSON objects "
        "naming the `path` they continue and the `start` index, with the next `items`, `text` "
        f"or `entries` there. A handle lives {describe_ttl(cache.ttl_seconds)} after its last "
        f"use (at most {cache.max_entries:,} results are kept, fewer when they are large); "
        "with an expired or unknown handle, call the original tool again."
    )


def make_more_tool(name: str, cache: PageCache[Remainder], page: Callable[..., ToolResult]) -> Tool:
    """The continuation tool named `name`, serving pages with `page(handle, offset)`."""

    async def more(
        handle: Annotated[
            str,
            Field(
                description="The handle a cut result's notice gives.", min_length=1, max_length=64
            ),
        ],
        offset: Annotated[
            int,
            Field(
                description="Where to continue: 0 after the first page, then the offset "
                "each page's notice gives.",
                ge=0,
            ),
        ] = 0,
    ) -> ToolResult:
        return await anyio.to_thread.run_sync(page, handle, offset)

    return Tool.from_function(
        more,
        name=name,
        description=_description(cache),
        annotations=ToolAnnotations(
            read_only_hint=True, idempotent_hint=True, open_world_hint=False
        ),
    )


def serve_page(
    cache: PageCache[Remainder],
    counter: TokenCounter,
    tool: str,
    handle: str,
    offset: int,
    walls: Walls | None = None,
) -> ToolResult:
    """The page `tool(handle, offset)` returns, within the walls of the call that was cut
    (and `walls`, those of the client asking now, when given). Blocking: counts tokens."""
    remainder = cache.get(handle)
    if remainder is None:
        msg = (
            f"handle {handle!r} is unknown or expired (a handle lives "
            f"{describe_ttl(cache.ttl_seconds)} after its last use, and at most "
            f"{cache.max_entries:,} results are kept): call the original tool again"
        )
        raise ToolError(msg)
    limits = remainder.walls if walls is None else remainder.walls.tightest(walls)
    units = WalledCounter(counter, limits)
    budget = limits.tokens
    reserve = 60
    for attempt in range(RETRIES):
        try:
            page = remainder.page(offset, max(1, budget - reserve), units)
        except ValueError as exc:
            raise ToolError(str(exc)) from exc
        notice = _page_notice(tool, handle, remainder, page)
        notice_units = units.count(notice)
        used = units.count(page.body) + notice_units
        if used <= budget:
            break
        reserve = max(reserve + used - budget, notice_units + 8 * (attempt + 1))
    else:  # pragma: no cover - only a counter that is far from additive gets here
        msg = f"no page of this result fits {limits.describe()} by {counter.name}"
        raise ToolError(msg)
    return ToolResult(
        content=[TextContent(type="text", text=page.body), TextContent(type="text", text=notice)]
    )


def _page_notice(tool: str, handle: str, remainder: Remainder, page: Page) -> str:
    segment = page.segment
    units = UNIT_NAMES[segment.kind]
    where = "" if segment.path is None else f" of {path_label(segment.path)}"
    shown = f"{units} {page.first:,}-{page.last - 1:,} of {segment.total:,}{where}"
    if page.next_offset is None:
        follow = "This is the last page."
    else:
        follow = f"Next page: {more_call(tool, handle, page.next_offset)}."
    return f"[ragbudget: {remainder.tool} result, {shown}. {follow}]"
