"""Where the commands' log records go: stderr, since stdout belongs to the MCP protocol.

`ragbudget-guard` (`ragbudget guard`) and the application's `ragbudget serve` both speak MCP on
stdout; `configure_logging` sends ragbudget's own records (the library's, the guard's, and the
server's when it asks) to stderr at the `--log-level` the command was given (one of
`LOG_LEVELS`), and fastmcp's records too: each line plain (no rich highlighting) and bounded
(`MAX_LOG_CHARS`).
"""

from __future__ import annotations

import logging
import sys

import fastmcp

__all__ = ["LOG_LEVELS", "MAX_LOG_CHARS", "BoundedFormatter", "clipped", "configure_logging"]

LOG_LEVELS = frozenset({"DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"})
"""The `--log-level` values the commands take (upper case)."""
MAX_LOG_CHARS = 4000
"""Most characters of one log line: a wrapped server's error can be megabytes."""


def clipped(text: str, limit: int) -> str:
    """`text`, or its first `limit` characters and how many more there were."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]} ... [{len(text) - limit:,} more characters]"


class BoundedFormatter(logging.Formatter):
    """Plain `LEVEL logger: message` lines, each cut to `MAX_LOG_CHARS` with how much was
    left out (no colours, no highlighting: rich's highlighter took minutes on a 1 M-character
    error message)."""

    def __init__(self) -> None:
        super().__init__("%(levelname)s %(name)s: %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        return clipped(super().format(record), MAX_LOG_CHARS)


def configure_logging(level: str, *loggers: str) -> None:
    """ragbudget's own log records (the library's, the guard's, and those of the caller's own
    `loggers`: `ragbudget serve` passes `ragbudget_server`) go to stderr at `level` (one of
    `LOG_LEVELS`): stdout belongs to the protocol."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(BoundedFormatter())
    for name in ("ragbudget", "ragbudget_guard", *loggers):
        own = logging.getLogger(name)
        own.handlers[:] = [handler]
        own.setLevel(level)
        own.propagate = False
    # fastmcp logs through rich, whose highlighter took minutes on a wrapped server's error of
    # a million characters; it configures its handlers again when a server runs, so its own
    # setting is what keeps them plain (a StreamHandler), and the records go to our bounded
    # handler until then.
    fastmcp.settings.enable_rich_logging = False
    logging.getLogger("fastmcp").handlers[:] = [handler]
    # fastmcp echoes every log message sent to a client on this logger and lowers the record
    # to DEBUG only after the level check, so it would print DEBUG blocks at any level. The
    # server logs those messages itself (ragbudget_server.mcp.tools, INFO), the guard relays a
    # wrapped server's: below DEBUG, mute the echo.
    echo = logging.getLogger("fastmcp.server.context.to_client")
    echo.setLevel(logging.DEBUG if level == "DEBUG" else logging.CRITICAL + 1)
