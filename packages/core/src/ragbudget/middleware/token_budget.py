"""`TokenBudgetMiddleware`: every tool result of a FastMCP server within a token budget."""

from __future__ import annotations

import logging
import time
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import partial
from typing import Annotated, Any

import anyio.to_thread
import mcp_types as mt
from fastmcp import Context
from fastmcp.exceptions import ToolError
from fastmcp.server.middleware import CallNext, MiddlewareContext
from fastmcp.server.middleware.tool_injection import ToolInjectionMiddleware
from fastmcp.tools import Tool, ToolResult
from fastmcp.tools.base import InputRequiredToolResult
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp_types import TextContent, ToolAnnotations
from pydantic import Field

from ragbudget._checks import check_int
from ragbudget.counters import CounterSpec, TokenCounter, get_counter
from ragbudget.limits import DEFAULT_MAX_TOKENS_CEILING
from ragbudget.middleware.json_trim import path_label
from ragbudget.middleware.page_cache import PageCache
from ragbudget.middleware.paging import UNIT_NAMES, Page, Remainder, more_call
from ragbudget.middleware.receipts import Receipts
from ragbudget.middleware.result_guard import RETRIES, GuardOutcome, ResultGuard, visible_text

__all__ = ["MIN_MAX_TOKENS", "TokenBudgetMiddleware"]

logger = logging.getLogger(__name__)

MIN_MAX_TOKENS = 128
"""Below this a cut result could not hold its notice and a useful part of the result."""

MINIMUMS = frozenset({"minItems", "minLength", "minProperties"})
"""JSON schema keywords a shortened value may no longer satisfy."""

INLINE_CHARS = 50_000
"""Results with less text (or base64) than this are measured on the event loop; larger ones in
a worker thread."""


def _check_budget(name: str, value: object) -> int:
    """A budget: an int with room for a notice (`MIN_MAX_TOKENS`)."""
    return check_int(name, value, minimum=MIN_MAX_TOKENS)


def _has_minimums(schema: Any) -> bool:
    """Whether a JSON schema sets a minimum size that leaving things out could break."""
    if isinstance(schema, dict):
        for key, value in schema.items():
            if key in MINIMUMS and isinstance(value, int) and value > 0:
                return True
            if _has_minimums(value):
                return True
    elif isinstance(schema, list):
        return any(_has_minimums(item) for item in schema)
    return False


class TokenBudgetMiddleware(ToolInjectionMiddleware):
    """Keeps every tool result of a FastMCP server within `max_tokens`, with continuation pages.

    A result over the budget is cut the way a model can use: text after a whole line, JSON by
    leaving out trailing list items (it still parses, and structured content keeps matching
    the output schema), images and other media replaced by a note. A notice block says what
    was left out and names a handle; the `more(handle, offset)` tool this middleware adds
    serves the rest, page by page, each page within the same budget. Results within the
    budget pass through untouched.

    Setup:
        `pip install 'ragbudget[fastmcp]'` (and `ragbudget[tiktoken]` for exact counts).

    Key init args:
        max_tokens: the budget of every tool result (default 14,500: Claude Code's 25,000-token
            limit over ~1.7, the largest published inflation of Claude's tokenizers).
        counter: token counter spec (`ragbudget.get_counter`); default the calibrated
            estimate, as `ragbudget serve` uses; e.g. `"tiktoken:o200k_base"` for exact counts.
        tool_budgets: budgets for particular tools, by name (over `max_tokens`).
        exclude_tools: names of tools whose results are never touched.
        cache_entries / cache_chars / cache_ttl: bounds of the page cache: most results kept,
            most characters kept in all, seconds an unread result is kept (LRU beyond these).
        more_tool: name of the continuation tool (change it if your server has a `more`).
        continuation: False for servers whose tools page by themselves: no `more` tool, no
            cache; a cut result's notice then asks for less instead.

    A server that budgets its own answers hands their counts over with `vouch`, so they are
    not counted twice; every other result is measured here.

    Instantiate:
        ```python
        from fastmcp import FastMCP
        from ragbudget.middleware import TokenBudgetMiddleware

        mcp = FastMCP("my-server")
        mcp.add_middleware(TokenBudgetMiddleware(max_tokens=10_000))
        ```

    Use:
        A tool returning a 6,500-line log now returns its first lines within 10,000 tokens
        and a notice: `[ragbudget: cut to fit 10,000 tokens; showing lines 1-259 of 6,500
        (22,862 of 582,408 characters). ... Call more(handle="6GJmNcVeHKEd", offset=0) for the
        next page.]`; the model calls `more` with the offset each page's notice gives.

    Async:
        Everything runs in the server's event loop; measuring and cutting a large result runs
        in a worker thread so other sessions are not held up.
    """

    def __init__(
        self,
        max_tokens: int = DEFAULT_MAX_TOKENS_CEILING,
        *,
        counter: CounterSpec = None,
        tool_budgets: Mapping[str, int] | None = None,
        exclude_tools: Iterable[str] = (),
        cache_entries: int = 256,
        cache_chars: int = 50_000_000,
        cache_ttl: float = 900.0,
        more_tool: str = "more",
        continuation: bool = True,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.max_tokens = _check_budget("max_tokens", max_tokens)
        self.counter: TokenCounter = get_counter(counter)
        self.tool_budgets = {
            name: _check_budget(f"tool_budgets[{name!r}]", budget)
            for name, budget in (tool_budgets or {}).items()
        }
        if isinstance(exclude_tools, str):
            msg = f"exclude_tools must be a collection of names, not the string {exclude_tools!r}"
            raise TypeError(msg)
        self.exclude_tools = frozenset(exclude_tools)
        if not more_tool or not isinstance(more_tool, str):
            msg = f"more_tool must be a non-empty tool name, got {more_tool!r}"
            raise ValueError(msg)
        self.more_tool = more_tool
        self.cache: PageCache[Remainder] = PageCache(
            max_entries=cache_entries if continuation else 0,
            max_chars=cache_chars,
            ttl_seconds=cache_ttl,
            clock=clock,
        )
        self.guard = ResultGuard(self.counter, self.cache, more_tool if continuation else None)
        self.receipts = Receipts()
        super().__init__([self._make_more_tool()] if continuation else [])

    def vouch(self, result: ToolResult, *, tokens: int, counter: str) -> None:
        """Take `tokens` as what `result`'s content blocks count (by the counter named
        `counter`), measured by the server this middleware guards: the result is then passed
        without being counted again.

        For the server's own code, which holds this middleware: the receipt stays here, keyed
        by the result object (see `ragbudget.middleware.receipts`), so no tool result can
        carry a count this middleware believes. It holds for this object as it is now (a
        result whose blocks changed after is measured as any other) and for one call. A count
        by this middleware's own counter is still checked against the tool's budget (a result
        over it is cut as any other); one by another counter is the server's own check.
        """
        self.receipts.file(result, tokens, counter)

    def budget_for(self, tool: str) -> int | None:
        """The budget `tool`'s results get (None: the tool is excluded)."""
        if tool in self.exclude_tools or tool == self.more_tool:
            return None
        return self.tool_budgets.get(tool, self.max_tokens)

    async def on_list_tools(
        self,
        context: MiddlewareContext[mt.ListToolsRequest],
        call_next: CallNext[mt.ListToolsRequest, Sequence[Tool]],
    ) -> Sequence[Tool]:
        """Hide the output schemas a shortened result could not match (those with minimums).

        A client validates structured content against the schema it was told; for these
        tools a cut result carries none, so none is advertised.
        """
        tools = await call_next(context)
        return [
            tool.model_copy(update={"output_schema": None})
            if tool.output_schema is not None
            and self.budget_for(tool.name) is not None
            and _has_minimums(tool.output_schema)
            else tool
            for tool in tools
        ]

    async def on_call_tool(
        self,
        context: MiddlewareContext[mt.CallToolRequestParams],
        call_next: CallNext[mt.CallToolRequestParams, ToolResult],
    ) -> ToolResult:
        """Measure the result, and cut it when it is over the tool's budget."""
        result = await call_next(context)
        # An input-required ask or a task acknowledgement carries no content to measure.
        if isinstance(result, InputRequiredToolResult) or not isinstance(result, ToolResult):
            return result
        name = context.message.name
        budget = self.budget_for(name)
        receipt = self.receipts.redeem(result)
        if budget is None:
            return result
        if receipt is not None and (
            receipt.counter != self.counter.name or receipt.tokens <= budget
        ):
            return result  # measured by the server itself: not counted again
        chars = sum(len(visible_text(block)) for block in result.content)
        if chars <= INLINE_CHARS:
            if self.guard.within(result, budget):
                return result
        elif await anyio.to_thread.run_sync(self.guard.within, result, budget):
            return result
        schema = await self._output_schema(context, name)
        outcome = await anyio.to_thread.run_sync(
            partial(self.guard.cut, result, budget, name, schema)
        )
        await self._report(context.fastmcp_context, outcome)
        return outcome.result

    async def _output_schema(
        self, context: MiddlewareContext[mt.CallToolRequestParams], name: str
    ) -> dict[str, Any] | None:
        ctx = context.fastmcp_context
        if ctx is None:
            return None
        tool = await ctx.fastmcp.get_tool(name)
        return None if tool is None else tool.output_schema

    async def _report(self, ctx: Context | None, outcome: GuardOutcome) -> None:
        """A cut is a normal outcome (DEBUG, and an MCP log warning to the client); what the
        server's author should fix is a WARNING."""
        logger.debug("%s", outcome.summary)
        for problem in outcome.problems:
            logger.warning("%s", problem)
        if ctx is None:
            return
        with warnings.catch_warnings():
            # fastmcp 4 keeps MCP logging for protocol versions before 2026-07-28 and the SDK
            # marks the call deprecated; that is upstream's, not something a caller can act on.
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            try:
                await ctx.warning(outcome.summary, logger_name="ragbudget")
            except Exception:  # the result matters more than its log line
                logger.debug("could not send the MCP log message", exc_info=True)

    def _make_more_tool(self) -> Tool:
        async def more(
            handle: Annotated[
                str,
                Field(
                    description="The handle a cut result's notice gives.",
                    min_length=1,
                    max_length=64,
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
            """Continue a tool result that was cut to fit the token budget, one page at a time.

            Pages of a text result are its next lines; pages of a JSON result are JSON objects
            naming the `path` they continue and the `start` index, with the next `items`,
            `text` or `entries` there.
            """
            return await anyio.to_thread.run_sync(self.page, handle, offset)

        return Tool.from_function(
            more,
            name=self.more_tool,
            annotations=ToolAnnotations(
                read_only_hint=True, idempotent_hint=True, open_world_hint=False
            ),
        )

    def page(self, handle: str, offset: int) -> ToolResult:
        """The continuation page `more(handle, offset)` returns (blocking: counts tokens)."""
        remainder = self.cache.get(handle)
        if remainder is None:
            msg = (
                f"handle {handle!r} is unknown or expired (results are kept "
                f"{self.cache.ttl_seconds:,.0f} s after their last read, at most "
                f"{self.cache.max_entries:,} of them): call the original tool again"
            )
            raise ToolError(msg)
        budget = remainder.max_tokens
        reserve = 60
        for attempt in range(RETRIES):
            try:
                page = remainder.page(offset, max(1, budget - reserve), self.counter)
            except ValueError as exc:
                raise ToolError(str(exc)) from exc
            notice = self._page_notice(handle, remainder, page)
            notice_tokens = self.counter.count(notice)
            used = self.counter.count(page.body) + notice_tokens
            if used <= budget:
                break
            reserve = max(reserve + used - budget, notice_tokens + 8 * (attempt + 1))
        else:  # pragma: no cover - only a counter that is far from additive gets here
            msg = f"no page of this result fits {budget:,} tokens by {self.counter.name}"
            raise ToolError(msg)
        content: Sequence[TextContent] = [
            TextContent(type="text", text=page.body),
            TextContent(type="text", text=notice),
        ]
        return ToolResult(content=list(content))

    def _page_notice(self, handle: str, remainder: Remainder, page: Page) -> str:
        segment = page.segment
        units = UNIT_NAMES[segment.kind]
        where = "" if segment.path is None else f" of {path_label(segment.path)}"
        shown = f"{units} {page.first:,}-{page.last - 1:,} of {segment.total:,}{where}"
        if page.next_offset is None:
            follow = "This is the last page."
        else:
            follow = f"Next page: {more_call(self.more_tool, handle, page.next_offset)}."
        return f"[ragbudget: {remainder.tool} result, {shown}. {follow}]"
