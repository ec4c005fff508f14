"""The guard: fastmcp's proxy in front of the wrapped server, with `TokenBudgetMiddleware` on it.

fastmcp's proxy (`FastMCPProxy` over the client `upstream.Upstream` makes: one session per
guard connection, advertising what the guard's client supports) relays the wrapped server's
tools, resources, templates, prompts, logging, progress, cancellations, and the server-to-client
requests (roots, sampling, elicitation) of a handshake-era session. On top of it:

- `TokenBudgetMiddleware`: every tool result within the budget, the rest served by `more`;
- `PagingNote`: one line at the end of each budgeted tool's description saying so;
- `BackendErrors`: the wrapped server's failures (did not start, exited, hung, wrote
  something that is not MCP or not UTF-8) as errors that name it, with the secrets it was
  given redacted;
- `ListChanges`: the wrapped server's notices that its lists changed, relayed.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any

import anyio
import mcp_types as mt
from fastmcp import FastMCP
from fastmcp.exceptions import ToolError
from fastmcp.server.middleware import CallNext, Middleware, MiddlewareContext
from fastmcp.server.providers.proxy import FastMCPProxy, ProxyMetadataMiddleware
from fastmcp.tools import Tool
from mcp.shared.exceptions import MCPError
from ragbudget.middleware import TokenBudgetMiddleware
from ragbudget.middleware.clients import client_name

from ragbudget_guard.backend import Backend
from ragbudget_guard.logs import clipped
from ragbudget_guard.upstream import ListChanges, StdoutWatch, Upstream

__all__ = ["BackendErrors", "NotUtf8", "PagingNote", "StdoutWatch", "build_guard"]

logger = logging.getLogger(__name__)

REDACTED = "***"
CONNECT_FAILED = "Client failed to connect: "
ERROR_DETAIL_CHARS = 1000
"""Most characters of the wrapped server's own message an error quotes (the rest is left out,
said so), so the error stays within every client's walls and logs fast."""
"""fastmcp's prefix of a connection failure (sometimes twice)."""
CHAIN_DEPTH = 8
SECRET_CHARS = 4
"""Values shorter than this are not redacted (they would blank out ordinary words)."""


class NotUtf8(Exception):
    """The wrapped server wrote bytes that are not UTF-8 while a request was in flight."""

    def __init__(self, sample: bytes) -> None:
        super().__init__(f"the server wrote bytes that are not UTF-8: {sample!r}")
        self.sample = sample


def _chain(exc: BaseException) -> list[BaseException]:
    """`exc`, then its causes (first leaf of each exception group), outermost first."""
    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and len(chain) < CHAIN_DEPTH:
        while isinstance(current, BaseExceptionGroup) and current.exceptions:
            current = current.exceptions[0]
        chain.append(current)
        current = current.__cause__ or current.__context__
    return chain


def _is_http_error(exc: BaseException) -> bool:
    """An error of the HTTP client fastmcp uses (httpx or its successor), without importing it."""
    return type(exc).__module__.split(".")[0].startswith("httpx")


class BackendErrors(Middleware):
    """The wrapped server's failures as errors naming it: a tool call gets a tool error (an
    `isError` result the model can read), any other request a JSON-RPC error."""

    def __init__(
        self,
        backend: Backend,
        *,
        timeout: float,
        more_tool: str = "more",
        stdout: StdoutWatch | None = None,
        on_timeout: Callable[[], Awaitable[None]] | None = None,
        on_failure: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self.name = backend.name
        self.timeout = timeout
        self.more_tool = more_tool
        self.stdout = stdout or StdoutWatch()
        self.on_timeout = on_timeout
        self.on_failure = on_failure
        """Called after a failure that is not an MCP error (HTTP: drop the session)."""
        secrets = backend.secrets
        self.secrets = sorted({s for s in secrets if len(s) >= SECRET_CHARS}, key=len, reverse=True)

    def redact(self, text: str) -> str:
        """`text` with every secret the guard was given replaced by `***`."""
        for secret in self.secrets:
            text = text.replace(secret, REDACTED)
        return text

    def describe(self, exc: BaseException) -> str:
        """What went wrong, in words an agent can act on."""
        chain = _chain(exc)
        detail = str(chain[-1] if isinstance(chain[-1], OSError) else exc) or type(exc).__name__
        while detail.startswith(CONNECT_FAILED):
            detail = detail.removeprefix(CONNECT_FAILED)
        detail = self.redact(detail)  # before the cut, so no part of a secret is left
        detail = clipped(detail, ERROR_DETAIL_CHARS)  # megabytes of error: its start says enough
        if isinstance(exc, NotUtf8):
            what = (
                f"wrote bytes to stdout that are not UTF-8 ({exc.sample!r}), so its answer was "
                "dropped; an MCP stdio server must write UTF-8 (for a Python server, "
                "PYTHONIOENCODING=utf-8 in --env)"
            )
        elif self.timed_out(exc):
            what = f"did not answer within {self.timeout:g} s (it may hang); the call was dropped"
            if self.on_timeout is not None:
                what += " and the server restarted"
        elif any(isinstance(e, FileNotFoundError | PermissionError) for e in chain):
            what = f"could not be started: {detail}"
        elif any(isinstance(e, OSError) or _is_http_error(e) for e in chain):
            what = f"could not be reached: {detail}"
        elif any(isinstance(e, anyio.ClosedResourceError | anyio.EndOfStream) for e in chain) or (
            "connection closed" in detail.lower()
        ):
            what = f"exited or closed the connection ({detail})"
        else:
            what = f"failed: {detail}"
        message = (
            f"the wrapped MCP server {self.name!r} {what}.{self.stdout.describe()} If it keeps "
            "failing, check its log on the guard's stderr."
        )
        return self.redact(message)

    async def relay(self, context: MiddlewareContext[Any], call_next: CallNext[Any, Any]) -> Any:
        """`call_next(context)`, stopped at once (`NotUtf8`) if the wrapped server writes bytes
        that are not UTF-8 meanwhile: its answer would be garbled or never come."""
        before, result = self.stdout.not_utf8, None
        with self.stdout.guarding():  # cancelled by such bytes: `result` is then not set
            result = await call_next(context)
        if self.stdout.not_utf8 != before:
            raise NotUtf8(self.stdout.not_utf8_sample)
        return result

    @staticmethod
    def timed_out(exc: BaseException) -> bool:
        while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
            exc = exc.exceptions[0]
        return isinstance(exc, TimeoutError) or "timed out" in str(exc).lower()

    async def fail(self, exc: Exception, what: str) -> str:
        """Log `exc` (the wrapped server's failure during `what`), restart a server that hung
        (drop a session that failed), and return the message for the client."""
        message = self.describe(exc)
        self.stdout.count = 0  # reported once
        logger.warning("%s: %s", what, message)
        if self.on_timeout is not None and self.timed_out(exc):
            with anyio.CancelScope(shield=True):
                await self.on_timeout()
        elif self.on_failure is not None and not isinstance(exc, MCPError):
            with anyio.CancelScope(shield=True):
                await self.on_failure()
        return message

    async def on_call_tool(
        self,
        context: MiddlewareContext[mt.CallToolRequestParams],
        call_next: CallNext[mt.CallToolRequestParams, Any],
    ) -> Any:
        name = context.message.name
        if name == self.more_tool:
            return await call_next(context)
        try:
            return await self.relay(context, call_next)
        except Exception as exc:
            # The wrapped server's own errors come back as results (isError): anything
            # raised here is the way to it failing.
            raise ToolError(await self.fail(exc, f"tool {name}")) from None

    async def on_request(
        self, context: MiddlewareContext[Any], call_next: CallNext[Any, Any]
    ) -> Any:
        try:
            if context.method == "tools/call":  # relayed by on_call_tool, as a tool error
                return await call_next(context)
            return await self.relay(context, call_next)
        except ToolError:
            raise
        except MCPError as exc:
            if exc.error.code in {mt.METHOD_NOT_FOUND, mt.INVALID_PARAMS}:
                raise MCPError(
                    code=exc.error.code, message=self.redact(exc.error.message)
                ) from None
            message = await self.fail(exc, str(context.method))
            raise MCPError(code=mt.INTERNAL_ERROR, message=message) from None
        except Exception as exc:
            message = await self.fail(exc, str(context.method))
            raise MCPError(code=mt.INTERNAL_ERROR, message=message) from None


class StartTolerantMetadata(ProxyMetadataMiddleware):
    """fastmcp's proxy metadata (the wrapped server's instructions) at initialize, without
    failing the guard's own initialize when the wrapped server does not start."""

    async def _read_upstream(self, client: Any, context: Any) -> Any:
        try:
            return await super()._read_upstream(client, context)
        except Exception:
            logger.debug("the wrapped MCP server did not start; the next request says why")
            return None


class PagingNote(Middleware):
    """Adds one line to the description of every tool whose results may be cut and paged."""

    def __init__(self, budget: TokenBudgetMiddleware) -> None:
        self.budget = budget

    def note(self, tool: str, client: str | None = None) -> str | None:
        """The line for `tool` as the client named `client` sees it, or None for an excluded
        tool (and the continuation tool)."""
        budget = self.budget.budget_for(tool, client)
        if budget is None:
            return None
        return (
            f"(Results over {budget.walls.describe()} are cut to fit; call "
            f"`{self.budget.more_tool}` with the handle a cut result gives for the rest.)"
        )

    async def on_list_tools(
        self,
        context: MiddlewareContext[mt.ListToolsRequest],
        call_next: CallNext[mt.ListToolsRequest, Sequence[Tool]],
    ) -> Sequence[Tool]:
        tools = await call_next(context)
        client = client_name(context.fastmcp_context)
        noted: list[Tool] = []
        for tool in tools:
            line = self.note(tool.name, client)
            if line is None:
                noted.append(tool)
                continue
            description = f"{tool.description}\n\n{line}" if tool.description else line
            noted.append(tool.model_copy(update={"description": description}))
        return noted


def build_guard(
    backend: Backend,
    budget: TokenBudgetMiddleware,
    *,
    timeout: float = 120.0,
    startup_timeout: float = 30.0,
) -> FastMCP[Any]:
    """The guard server for `backend`: every capability of it relayed, every tool result
    within `budget`'s walls and continued by its `more` tool.

    `timeout` bounds each request to the wrapped server and `startup_timeout` its start and
    handshake; past either the caller gets an error naming the server.
    """
    changes = ListChanges()
    stdout = StdoutWatch(on_change=changes.relay)
    upstream = Upstream(backend, timeout=timeout, startup_timeout=startup_timeout, stdout=stdout)

    @asynccontextmanager
    async def lifespan(_server: FastMCP[Any]) -> AsyncIterator[dict[str, Any]]:
        try:
            yield {}
        finally:
            # The wrapped process ends with the guard, whatever ended the guard.
            with anyio.CancelScope(shield=True):
                await upstream.close()

    guard = FastMCPProxy(
        client_factory=upstream.factory,
        name=f"ragbudget guard: {backend.name}",
        lifespan=lifespan,
        provider_error_strategy="raise",
    )
    # The guard starts whether or not the wrapped server does: its failure then comes with
    # each request, naming it, rather than as a guard that will not connect.
    guard.middleware[:] = [
        StartTolerantMetadata(m.provider, identity=m.identity)
        if isinstance(m, ProxyMetadataMiddleware)
        else m
        for m in guard.middleware
    ]
    # Outermost, so that failures anywhere reach the client as errors naming the server.
    errors = BackendErrors(
        backend,
        timeout=timeout,
        more_tool=budget.more_tool,
        stdout=stdout,
        # A stdio server that hung is stopped; the next call starts it again. An HTTP
        # session that failed is dropped; the next call opens another.
        on_timeout=upstream.reset if backend.url is None else None,
        on_failure=upstream.reset if backend.url is not None else None,
    )
    guard.middleware.insert(0, errors)
    changes.provider = next(
        m.provider for m in guard.middleware if isinstance(m, ProxyMetadataMiddleware)
    )
    guard.add_middleware(changes)
    guard.add_middleware(budget)
    guard.add_middleware(PagingNote(budget))
    return guard
