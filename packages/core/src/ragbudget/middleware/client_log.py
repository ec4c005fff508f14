"""Telling the client about a cut with an MCP log message, only when the request asked for one.

MCP 2026-07-28 deprecates logging: a server must not send `notifications/message` unless the
request carried a log level in its `_meta` (`io.modelcontextprotocol/logLevel`), and then
only at that level or above. Handshake-era sessions keep their rules (every level may be
sent; the server's `client_log_level` filters). The notification is sent as a plain
notification on the request's stream, so no deprecated call is made and no process-wide
warning filter is touched.
"""

from __future__ import annotations

import logging
from typing import Any, get_args

import mcp_types as mt
from fastmcp import Context
from mcp.server.connection import allowed_log_levels

__all__ = ["send_log"]

logger = logging.getLogger(__name__)

LEVELS: tuple[mt.LoggingLevel, ...] = get_args(mt.LoggingLevel)
"""MCP log levels, least severe first."""


def _allowed(ctx: Context, level: mt.LoggingLevel) -> bool:
    rc = ctx.request_context
    if rc is None:
        return False
    if level not in allowed_log_levels(rc.protocol_version, rc.meta):
        return False
    floor: Any = getattr(ctx.fastmcp, "client_log_level", None)
    return floor not in LEVELS or LEVELS.index(level) >= LEVELS.index(floor)


async def send_log(
    ctx: Context | None, level: mt.LoggingLevel, message: str, logger_name: str
) -> bool:
    """Send `message` to the client as a log notification when the request allows `level`;
    True when it was sent. A failure to send is logged at DEBUG: the result matters more."""
    if ctx is None or not _allowed(ctx, level):
        return False
    rc = ctx.request_context
    assert rc is not None  # checked by _allowed
    notification = mt.LoggingMessageNotification(
        params=mt.LoggingMessageNotificationParams(level=level, data=message, logger=logger_name)
    )
    try:
        await rc.session.send_notification(notification, related_request_id=rc.request_id)
    except Exception:
        logger.debug("could not send the MCP log message", exc_info=True)
        return False
    return True
