"""Where the commands' log records go: stderr, since stdout belongs to the MCP protocol.

`ragbudget serve` and `ragbudget guard` both speak MCP on stdout; `configure_logging` sends
ragbudget's own records (the library's and the server's) to stderr at the `--log-level` the
command was given (one of `LOG_LEVELS`).
"""

from __future__ import annotations

import logging
import sys

__all__ = ["LOG_LEVELS", "configure_logging"]

LOG_LEVELS = frozenset({"DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"})
"""The `--log-level` values the commands take (upper case)."""


def configure_logging(level: str) -> None:
    """ragbudget's own log records (the library's and the server's) go to stderr at `level`
    (one of `LOG_LEVELS`): stdout belongs to the protocol."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    for name in ("ragbudget", "ragbudget_server"):
        own = logging.getLogger(name)
        own.handlers[:] = [handler]
        own.setLevel(level)
        own.propagate = False
    # fastmcp echoes every log message sent to a client on this logger and lowers the record
    # to DEBUG only after the level check, so it would print DEBUG blocks at any level. The
    # server logs those messages itself (ragbudget_server.mcp.tools, INFO): below DEBUG, mute
    # the echo.
    echo = logging.getLogger("fastmcp.server.context.to_client")
    echo.setLevel(logging.DEBUG if level == "DEBUG" else logging.CRITICAL + 1)
