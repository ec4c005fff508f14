"""The wrapped stdio server's transport: fastmcp's `StdioTransport`, whose reader says at once
when the server writes bytes that are not UTF-8.

MCP's stdio transport is UTF-8. The SDK's reader decodes strictly by default, and fastmcp gives
it no other choice: a byte that is not UTF-8 ends the reader, which then drains stdout until the
process exits, so the call in flight got no answer until the guard's `--timeout` (120 s) and
then a message about a hang. Here the reader decodes with `NOT_UTF8_ERRORS`, an error handler
that puts U+FFFD in place of the bytes (so the session goes on) and hands them to the
transport's `on_not_utf8`, which the guard uses to fail the request in flight at once, saying
so (`ragbudget_guard.proxy.BackendErrors`).

The process is kept alive between the guard's requests and started again after it exits, as
fastmcp's `keep_alive` transport does (this is its `connect` with the reader's parameters made
here; tests/guard/test_guard_fastmcp.py checks what it relies on).
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import sys
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

import anyio
from fastmcp.client.transports import StdioTransport
from fastmcp.client.transports.base import TransportOptions
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

__all__ = ["NOT_UTF8_ERRORS", "Utf8StdioTransport"]

NOT_UTF8_ERRORS = "ragbudget-guard-not-utf8"
"""The codec error handler the guard's reader decodes the server's stdout with."""
CONTEXT_BYTES = 16
"""Bytes on each side of the first bad one that the handler passes on (for the message)."""

_REPORT: ContextVar[Callable[[bytes], None] | None] = ContextVar("ragbudget_guard_not_utf8")
"""Where the reader of this context reports bytes that are not UTF-8 (each transport's
connection task sets it; the reader task it starts inherits it)."""


def _replace_and_report(error: UnicodeError) -> tuple[str, int]:
    if not isinstance(error, UnicodeDecodeError):  # pragma: no cover - only decoding uses it
        raise error
    report = _REPORT.get(None)
    if report is not None:
        data = bytes(error.object)
        report(data[max(0, error.start - CONTEXT_BYTES) : error.end + CONTEXT_BYTES])
    return "\ufffd", error.end


codecs.register_error(NOT_UTF8_ERRORS, _replace_and_report)


class Utf8StdioTransport(StdioTransport):
    """A `keep_alive` stdio transport that calls `on_not_utf8(bytes)` when the server writes
    bytes that are not UTF-8 (the session reads U+FFFD in their place and goes on)."""

    def __init__(
        self,
        command: str,
        args: list[str],
        *,
        env: dict[str, str] | None = None,
        cwd: str | None = None,
        on_not_utf8: Callable[[bytes], None] | None = None,
    ) -> None:
        super().__init__(command, args, env=env, cwd=cwd, keep_alive=True)
        self.on_not_utf8 = on_not_utf8

    def parameters(self) -> StdioServerParameters:
        """The SDK's parameters, with the reporting decoder (outside the SDK's declared choices
        of handler, which it passes to the decoder as they are: hence `model_construct`)."""
        checked = StdioServerParameters(
            command=self.command, args=self.args, env=self.env, cwd=self.cwd
        )
        return StdioServerParameters.model_construct(
            **{**dict(checked), "encoding_error_handler": NOT_UTF8_ERRORS}
        )

    async def connect(
        self, *, transport_options: TransportOptions | None = None, **session_kwargs: Any
    ) -> ClientSession | None:
        options = transport_options or TransportOptions()
        async with self._connect_lock:
            task = self._connect_task
            if task is not None and (task.done() or self._is_session_dead()):
                await self.disconnect()  # type: ignore[no-untyped-call]  # exited: start again
            if self._connect_task is not None:
                return None
            session: asyncio.Future[ClientSession] = asyncio.Future()
            self._session_options = options
            self._connect_task = asyncio.create_task(
                _connect(
                    self, options, session_kwargs, self._ready_event, self._stop_event, session
                )
            )
            await self._ready_event.wait()
            if self._connect_task.done() and (error := self._connect_task.exception()):
                raise error
            self._session = await session
            return self._session


async def _connect(
    transport: Utf8StdioTransport,
    options: TransportOptions,
    session_kwargs: dict[str, Any],
    ready: anyio.Event,
    stop: anyio.Event,
    session: asyncio.Future[ClientSession],
) -> None:
    """The connection: the process and its session, held until `stop` (fastmcp's own task, with
    this transport's parameters)."""
    _REPORT.set(transport.on_not_utf8)
    params = transport.parameters()
    try:
        async with contextlib.AsyncExitStack() as stack:
            streams = await stack.enter_async_context(stdio_client(params, errlog=sys.stderr))
            session.set_result(
                await stack.enter_async_context(options.session_class(*streams, **session_kwargs))
            )
            ready.set()
            await stop.wait()
    except Exception:
        ready.set()  # the caller waits for it, then reads the failure
        raise
