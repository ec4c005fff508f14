"""`TokenBudgetMiddleware`: every tool result of a FastMCP server within its client's walls."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import partial

import anyio.to_thread
import mcp_types as mt
from fastmcp import Context
from fastmcp.exceptions import DisabledError, FastMCPError, NotFoundError, ToolError
from fastmcp.server.middleware import CallNext, MiddlewareContext
from fastmcp.server.middleware.tool_injection import ToolInjectionMiddleware
from fastmcp.tools import Tool, ToolResult
from fastmcp.tools.base import InputRequiredToolResult

from ragbudget.counters import CounterSpec, TokenCounter, get_counter
from ragbudget.exact import default_spec
from ragbudget.limits import Walls, with_estimate_margin
from ragbudget.middleware.clients import (
    MIN_MAX_TOKENS,
    ResolvedWalls,
    WallPolicy,
    client_name,
    send_log,
    visible_text,
)
from ragbudget.middleware.counts import CountMemo, Receipt, Receipts
from ragbudget.middleware.cut import (
    GuardOutcome,
    ResultGuard,
    check_name_free,
    cut_error,
    make_more_tool,
    serve_page,
)
from ragbudget.pages.cache import PageCache
from ragbudget.pages.remainder import Remainder

__all__ = ["MIN_MAX_TOKENS", "TokenBudgetMiddleware"]

logger = logging.getLogger(__name__)

INLINE_CHARS = 50_000
"""Results with less text (or base64) than this are measured on the event loop; larger ones in
a worker thread."""

CACHE_BYTES = 100_000_000
"""The page cache's default memory bound: 100 MB, measured on what it holds."""


class TokenBudgetMiddleware(ToolInjectionMiddleware):
    """Keeps every tool result of a FastMCP server within the walls of the client that reads
    it (tokens, characters, UTF-8 bytes), with continuation pages.

    Each call is budgeted against the profile of the client that made it (its
    `clientInfo.name`: Claude Code, Codex, Copilot CLI, ...; `ragbudget.limits.PROFILES`) or
    walls the server fixes. Everything a model may read counts: every content block, the
    structured content as sent, and tool errors. A result over its walls is cut the way a
    model can use: text after a whole line, JSON by leaving out trailing list items (it still
    parses), images and other media replaced by a note; a cut result is text only, so the
    model of every client reads it (and the budgeted tools are listed without an output
    schema). A notice block says what was left out, which wall bound, which profile is in
    force, and names a handle; the `more(handle, offset)` tool this middleware adds serves
    the rest, page by page, each page within the same walls.
    Results within them pass through untouched.

    Setup:
        `pip install 'ragbudget[fastmcp]'` (with bpe-openai for exact counts).

    Key init args:
        max_tokens: the token wall of every result (at least 128); default None: the
            client's profile's (9,000 for an unknown client). The client's character and
            byte walls still apply.
        client: a profile name (`"claude-code"`, `"codex"`, `"default"`, ...) to use for every
            client instead of the one each client's name picks.
        walls: fixed `ragbudget.limits.Walls` for every client (not with `max_tokens` or
            `client`).
        counter: token counter spec (`ragbudget.get_counter`); default `"exact"` (the
            larger of the exact cl100k_base and o200k_base counts, by bpe-openai, which
            `ragbudget[fastmcp]` installs where it has wheels), else the calibrated estimate
            with a 15% margin on top (any inexact counter gets it).
        tool_budgets: per tool, a token wall (int) or all the walls (`Walls`).
        exclude_tools: names of tools whose results are never touched (None: none).
        cache_entries / cache_chars / cache_bytes / cache_ttl: bounds of the page cache: most
            results kept, most characters kept in all, most bytes of memory held in all
            (measured), seconds an unread result is kept (LRU beyond these).
        more_tool: name of the continuation tool; a server with its own tool of that name is
            refused (an error naming `more_tool`) until another is given.
        continuation: False for servers whose tools page by themselves: no `more` tool, no
            cache; a cut result's notice then asks for less instead.

    A server that budgets its own answers hands their counts over with `vouch`, so they are
    not counted twice; every other result is measured here.

    Instantiate:
        ```python
        from fastmcp import FastMCP
        from ragbudget.middleware import TokenBudgetMiddleware

        mcp = FastMCP("my-server")
        mcp.add_middleware(TokenBudgetMiddleware())  # each client's own walls
        ```

    Use:
        A tool returning a 6,500-line log to Codex now returns its first lines and a notice:
        `[ragbudget: cut to fit 9,000 tokens (the tokens wall bound; profile codex); showing
        lines 1-259 of 6,500 (...). Call more(handle="6GJmNcVeHKEd", offset=0) for the next
        page (the handle lives 15 minutes after its last use).]`; the model calls `more` with
        the offset each page's notice gives.

    Async:
        Everything runs in the server's event loop; measuring and cutting a large result runs
        in a worker thread so other sessions are not held up.
    """

    def __init__(
        self,
        max_tokens: int | None = None,
        *,
        client: str | None = None,
        walls: Walls | None = None,
        counter: CounterSpec = None,
        tool_budgets: Mapping[str, int | Walls] | None = None,
        exclude_tools: Iterable[str] | None = (),
        cache_entries: int = 256,
        cache_chars: int = 50_000_000,
        cache_bytes: int = CACHE_BYTES,
        cache_ttl: float = 900.0,
        more_tool: str = "more",
        continuation: bool = True,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        base = get_counter(counter if counter is not None else default_spec())
        self.counter: TokenCounter = with_estimate_margin(base, "json")
        self.policy = WallPolicy(
            max_tokens=max_tokens,
            client=client,
            walls=walls,
            tool_budgets=tool_budgets,
            base_counter=base,
        )
        self.max_tokens = self.policy.for_client(None).walls.tokens
        """The token wall for a client no profile names (or the fixed one)."""
        self.exclude_tools = _tool_names(exclude_tools)
        if not more_tool or not isinstance(more_tool, str):
            msg = f"more_tool must be a non-empty tool name, got {more_tool!r}"
            raise ValueError(msg)
        self.more_tool = more_tool
        self.continuation = continuation
        self.cache: PageCache[Remainder] = PageCache(
            max_entries=cache_entries if continuation else 0,
            max_chars=cache_chars,
            max_bytes=cache_bytes,
            ttl_seconds=cache_ttl,
            clock=clock,
            names={
                "max_entries": "cache_entries",
                "max_chars": "cache_chars",
                "max_bytes": "cache_bytes",
                "ttl_seconds": "cache_ttl",
            },
        )
        self.receipts = Receipts()
        more = make_more_tool(more_tool, self.cache, self.page) if continuation else None
        super().__init__([more] if more is not None else [])

    @property
    def guard(self) -> ResultGuard:
        """The guard of a client no profile names (or of the fixed walls)."""
        return self.guard_for(self.policy.for_client(None))

    def guard_for(self, budget: ResolvedWalls) -> ResultGuard:
        """A guard that counts in `budget`'s units and says where its walls come from."""
        more_tool = self.more_tool if self.continuation else None
        counter = budget.counter(CountMemo(self.counter))  # a guard serves one call
        return ResultGuard(counter, self.cache, more_tool, source=budget.source)

    def vouch(self, result: ToolResult, *, tokens: int, counter: str) -> None:
        """Take `tokens` as what `result`'s content blocks count (by the counter named
        `counter`), measured by the server this middleware guards: the blocks' tokens are
        then not counted again.

        For the server's own code, which holds this middleware: the receipt stays here, keyed
        by the result object (see `ragbudget.middleware.counts`), so no tool result can
        carry a count this middleware believes. It holds for this object as it is now (a
        result whose blocks changed after is measured as any other) and for one call. A count
        by this middleware's own counter is still checked against the tool's token wall (a
        result over it is cut as any other); one by another counter is the server's own
        check. A server that vouches answers for the result's character and byte walls and
        its structured content itself (as `ragbudget serve` budgets its answers).
        """
        self.receipts.file(result, tokens, counter)

    def budget_for(self, tool: str, client: str | None = None) -> ResolvedWalls | None:
        """The walls `tool`'s results get for the client named `client` (None: excluded)."""
        if tool in self.exclude_tools or (self.continuation and tool == self.more_tool):
            return None
        return self.policy.resolve(tool, client)

    async def on_list_tools(
        self,
        context: MiddlewareContext[mt.ListToolsRequest],
        call_next: CallNext[mt.ListToolsRequest, Sequence[Tool]],
    ) -> Sequence[Tool]:
        """Refuse a server whose own tool has the continuation tool's name; list the budgeted
        tools without their output schema.

        A cut result is text only (its notice and handle then reach the model of every
        client: `cut.text_only`), and a client validates a result against the schema it was
        told, so no budgeted tool promises structured content (fastmcp's own response limiter
        does the same). Results within the walls keep their structured content.
        """
        await self._check_more_tool(context.fastmcp_context)
        tools = await call_next(context)
        return [
            tool.model_copy(update={"output_schema": None})
            if tool.output_schema is not None and self.budget_for(tool.name) is not None
            else tool
            for tool in tools
        ]

    async def _check_more_tool(self, ctx: Context | None, *, calling: bool = False) -> None:
        if self.continuation and ctx is not None:
            await check_name_free(ctx.fastmcp, self.more_tool, calling=calling)

    async def on_call_tool(
        self,
        context: MiddlewareContext[mt.CallToolRequestParams],
        call_next: CallNext[mt.CallToolRequestParams, ToolResult],
    ) -> ToolResult:
        """Measure the result (or the error), and cut it when it is over the tool's walls."""
        name, ctx = context.message.name, context.fastmcp_context
        if name == self.more_tool:
            await self._check_more_tool(ctx, calling=True)
        budget = self.budget_for(name, client_name(ctx))
        try:
            result = await call_next(context)
        except (NotFoundError, DisabledError):
            raise
        except FastMCPError as exc:
            if budget is None:
                raise
            guard = self.guard_for(budget)
            message = await anyio.to_thread.run_sync(
                partial(cut_error, guard, budget.walls.tokens, str(exc), name)
            )
            if message is None:
                raise
            await self._report(ctx, message[1])
            raise ToolError(message[0]) from exc
        # An input-required ask or a task acknowledgement carries no content to measure.
        if isinstance(result, InputRequiredToolResult) or not isinstance(result, ToolResult):
            return result
        receipt = self.receipts.redeem(result)
        if budget is None:
            return result
        guard = self.guard_for(budget)
        units = budget.walls.tokens
        if receipt is not None and self._vouched_within(receipt, units):
            return result  # measured by the server itself: its tokens not counted again
        chars = sum(len(visible_text(block)) for block in result.content)
        if chars <= INLINE_CHARS and result.structured_content is None:
            if guard.within(result, units):
                return result
        elif await anyio.to_thread.run_sync(guard.within, result, units):
            return result
        outcome = await anyio.to_thread.run_sync(partial(guard.cut, result, units, name))
        await self._report(ctx, outcome)
        return outcome.result

    def _vouched_within(self, receipt: Receipt, units: int) -> bool:
        """Whether a result the server counted passes as it is: a count by this counter within
        the token wall, or a count by another counter (the server's own check). A server that
        vouches answers for its result's other walls and its structured content itself."""
        return receipt.counter != self.counter.name or receipt.tokens <= units

    async def _report(self, ctx: Context | None, outcome: GuardOutcome) -> None:
        """A cut is a normal outcome (DEBUG, and an MCP log warning to a client that asked
        for log messages); what the server's author should fix is a WARNING."""
        logger.debug("%s", outcome.summary)
        for problem in outcome.problems:
            logger.warning("%s", problem)
        await send_log(ctx, "warning", outcome.summary, "ragbudget")

    def page(self, handle: str, offset: int, walls: Walls | None = None) -> ToolResult:
        """The continuation page `more(handle, offset)` returns (blocking: counts tokens),
        within the walls of the call that was cut (and `walls`, when given)."""
        return serve_page(self.cache, self.counter, self.more_tool, handle, offset, walls)


def _tool_names(names: Iterable[str] | None) -> frozenset[str]:
    """`exclude_tools` as a set of names (None: none), or a TypeError that names it."""
    if names is None:
        return frozenset()
    if isinstance(names, str):
        msg = f"exclude_tools must be a collection of names, not the string {names!r}"
        raise TypeError(msg)
    try:
        found = frozenset(names)
    except TypeError:
        msg = f"exclude_tools must be a collection of tool names, got {names!r}"
        raise TypeError(msg) from None
    wrong = sorted(repr(name) for name in found if not isinstance(name, str) or not name)
    if wrong:
        msg = f"exclude_tools must hold tool names (non-empty strings), got {', '.join(wrong)}"
        raise TypeError(msg)
    return found
