"""The guard's side as the wrapped server's client: one session per guard connection, the
capabilities of the client in front, and what the wrapped server says unasked (its lists
changed, lines on stdout that are not MCP).

- stdio: one process and one session (fastmcp's `keep_alive` transport), started again on the
  next call after it exits or hangs;
- HTTP: one session for the guard's client (the guard's front is stdio: one client per guard
  process), opened again on the next call after a failure, rather than fastmcp's default of a
  session per request (which costs a handshake a call and loses whatever state the server
  keeps per session). fastmcp's `StatefulProxyClient.new_stateful` keys its sessions by the
  front's connection, which at the 2026-07-28 era is each request: it would open one a call.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager, suppress
from typing import Any, cast

import anyio
import mcp_types as mt
from fastmcp.client import Client
from fastmcp.client.messages import MessageHandler
from fastmcp.client.transports import ClientTransport
from fastmcp.server.dependencies import get_context
from fastmcp.server.middleware import CallNext, Middleware, MiddlewareContext
from fastmcp.server.providers.proxy import ProxyClient, ProxyProvider, StatefulProxyClient

from ragbudget_guard.backend import Backend

__all__ = ["AsTheClient", "ListChanges", "StdoutWatch", "Upstream"]

logger = logging.getLogger(__name__)

GARBAGE_CHARS = 120
"""How much of a line that is not an MCP message an error quotes."""

RELAYED = {
    "sampling": ("sampling_callback", "sampling_capabilities"),
    "elicitation": ("elicitation_callback",),
    "roots": ("list_roots_callback",),
}
"""The client capabilities the guard relays, and the session arguments that advertise each."""

CACHES = {
    "tools": ("_tools_cache",),
    "resources": ("_resources_cache", "_templates_cache"),
    "prompts": ("_prompts_cache",),
}
"""fastmcp `ProxyProvider`'s cached lists (tests/guard/test_guard_fastmcp.py checks them)."""
NOTICES: dict[str, type[mt.ServerNotification]] = {
    "tools": mt.ToolListChangedNotification,
    "resources": mt.ResourceListChangedNotification,
    "prompts": mt.PromptListChangedNotification,
}


class AsTheClient(ClientTransport):
    """`inner`, whose sessions advertise the sampling, elicitation and roots capabilities of the
    guard's client only, as that client declared them (read from the request that opens the
    session: every session opens within one)."""

    def __init__(self, inner: ClientTransport) -> None:
        self.inner = inner
        self.legacy_only = inner.legacy_only

    @asynccontextmanager
    async def connect_session(self, **session_kwargs: Any) -> AsyncIterator[Any]:
        try:
            front = get_context().session.client_capabilities
        except RuntimeError:  # no request in progress: say what fastmcp's proxy says
            front = None
        if front is not None:
            session_kwargs = dict(session_kwargs)
            for capability, arguments in RELAYED.items():
                if getattr(front, capability) is None:
                    for argument in arguments:
                        session_kwargs.pop(argument, None)
            if front.sampling is not None and "sampling_callback" in session_kwargs:
                session_kwargs["sampling_capabilities"] = front.sampling
        async with self.inner.connect_session(**session_kwargs) as session:
            yield session

    async def close(self) -> None:
        await self.inner.close()  # type: ignore[no-untyped-call]

    def __repr__(self) -> str:
        return f"<AsTheClient({self.inner!r})>"


class StdoutWatch(MessageHandler):
    """Counts the lines the wrapped server wrote to stdout that are not MCP messages (a banner,
    a print, a traceback), so that the error of the call they broke can say so; passes the
    notices that its lists changed to `on_change`; and stops the requests in flight when the
    server writes bytes that are not UTF-8 (`guarding`, `saw_not_utf8`), whose answers would
    be garbled or lost."""

    def __init__(self, on_change: Callable[[str], Any] | None = None) -> None:
        self.count = 0
        self.last = ""
        self.on_change = on_change
        self.not_utf8 = 0
        """Times the server wrote bytes that are not UTF-8 (each chunk read counts once)."""
        self.not_utf8_sample = b""
        """The last such bytes, with a few around them."""
        self._in_flight: set[anyio.CancelScope] = set()

    def saw_not_utf8(self, data: bytes) -> None:
        """The transport read `data`, which holds bytes that are not UTF-8: stop every request
        in flight (their callers then say so)."""
        self.not_utf8 += 1
        self.not_utf8_sample = data
        for scope in self._in_flight:
            scope.cancel()

    @contextmanager
    def guarding(self) -> Iterator[anyio.CancelScope]:
        """A scope for one request to the server, cancelled when it writes bytes that are not
        UTF-8 before the request is done (`not_utf8` then differs from what it was)."""
        with anyio.CancelScope() as scope:
            self._in_flight.add(scope)
            try:
                yield scope
            finally:
                self._in_flight.discard(scope)

    async def on_exception(self, message: Exception) -> None:
        self.count += 1
        text = str(message)
        start = text.find("input_value=")
        if start >= 0:  # pydantic's JSON error quotes the line (shortened) there
            text = text[start + len("input_value=") :].split(", input_type=")[0]
        self.last = text[:GARBAGE_CHARS]

    async def _changed(self, kind: str) -> None:
        if self.on_change is not None:
            await self.on_change(kind)

    async def on_tool_list_changed(self, message: mt.ToolListChangedNotification) -> None:
        await self._changed("tools")

    async def on_resource_list_changed(self, message: mt.ResourceListChangedNotification) -> None:
        await self._changed("resources")

    async def on_prompt_list_changed(self, message: mt.PromptListChangedNotification) -> None:
        await self._changed("prompts")

    def describe(self) -> str:
        if not self.count:
            return ""
        lines = (
            "a line to stdout that is not an MCP message"
            if self.count == 1
            else f"{self.count:,} lines to stdout that are not MCP messages"
        )
        return (
            f" It wrote {lines} (the last: {self.last}); a stdio server must write its logs "
            "to stderr."
        )


class ListChanges(Middleware):
    """Relays the wrapped server's notices that its tools, resources or prompts changed to the
    guard's client, after dropping the proxy's cached copy of that list (so the next call of a
    new tool finds it, and the next `tools/list` has it, with `more`)."""

    def __init__(self) -> None:
        self.provider: ProxyProvider | None = None
        self.front: Any = None
        """The session of the guard's client (its front is stdio: one connection)."""

    async def on_message(
        self, context: MiddlewareContext[Any], call_next: CallNext[Any, Any]
    ) -> Any:
        if self.front is None and context.fastmcp_context is not None:
            with suppress(RuntimeError):  # a message outside a request
                self.front = context.fastmcp_context.session
        return await call_next(context)

    async def relay(self, kind: str) -> None:
        if self.provider is not None:
            for cache in CACHES[kind]:
                setattr(self.provider, cache, None)
        if self.front is None:
            return
        try:
            await self.front.send_notification(NOTICES[kind]())
        except Exception as exc:  # the client is gone: nothing to tell
            logger.debug("could not relay the %s list change: %r", kind, exc)


class Upstream:
    """The guard's client of `backend`: the factory fastmcp's proxy calls for a client, and how
    to drop a session that failed."""

    def __init__(
        self,
        backend: Backend,
        *,
        timeout: float,
        startup_timeout: float,
        stdout: StdoutWatch,
    ) -> None:
        self.backend = backend
        self.transport: Any = backend.transport(on_not_utf8=stdout.saw_not_utf8)
        kind = ProxyClient if backend.url is None else StatefulProxyClient
        self.client: ProxyClient[Any] = kind(
            AsTheClient(cast(ClientTransport, self.transport)),
            timeout=timeout,
            init_timeout=startup_timeout,
            message_handler=stdout,
            # The front's HTTP headers (its own credentials) are never sent on.
            forward_incoming_headers=False,
        )

    def factory(self) -> Client[Any]:
        """A client for the current request: over stdio a copy of the one client (they share
        its process and session); over HTTP the one client, whose session stays open when a
        request is done with it (`StatefulProxyClient`)."""
        if isinstance(self.client, StatefulProxyClient):
            return self.client
        return self.client.new()

    async def reset(self) -> None:
        """Drop the session, which the next request opens again (stdio: stop the process)."""
        try:
            if isinstance(self.client, StatefulProxyClient):
                await self.client.close()  # type: ignore[no-untyped-call]
            else:
                await self.transport.disconnect()
        except Exception as exc:  # the failure that led here, raised again: already reported
            logger.debug("dropping the session with %r: %r", self.backend.name, exc)

    async def close(self) -> None:
        """End the session (the guard is stopping)."""
        await self.reset()
        await self.transport.close()
