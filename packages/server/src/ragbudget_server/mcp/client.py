"""Who is asking: the client's name (and so its walls), and whether it asked for log messages.

The client's name comes from `clientInfo.name`: in each request's `_meta`
(`io.modelcontextprotocol/clientInfo`) on 2026-07-28, where requests are stateless, else sent
once at `initialize` on handshake protocol versions (kept on the connection); the core's
`ragbudget.middleware.clients.client_name` reads it, for the tools as for the middleware.
Without either, the default profile applies; `--client` (`ServerSettings.client`) overrides
both.

Log messages (`notifications/message`) go to a client only when it asked for them with a
level: the request's `_meta["io.modelcontextprotocol/logLevel"]` (the 2026-07-28 opt-in, which
the official SDK's clients send when given a log level), or on earlier protocol versions the
session's `logging/setLevel`. MCP 2026-07-28 deprecates MCP logging and forbids sending them
otherwise. Everything the model needs is in the answer's text
anyway; the server's own log (stderr) keeps every message.
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import os
import tempfile
from functools import cache
from pathlib import Path
from typing import Any, get_args

from fastmcp import Context
from mcp_types import (
    LOG_LEVEL_META_KEY,
    LoggingLevel,
    LoggingMessageNotification,
    LoggingMessageNotificationParams,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from ragbudget.counters import TokenCounter, get_counter, use_bundled_tiktoken_files

__all__ = ["log_if_asked", "offline_counter"]

logger = logging.getLogger(__name__)

_LEVELS: tuple[str, ...] = get_args(LoggingLevel)
"""MCP log levels, least severe first."""

_TIKTOKEN_FILES = {
    "cl100k_base": "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
    "o200k_base": "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
}
"""Where tiktoken fetches each encoding's BPE file (its cache is keyed by the URL's SHA-1)."""


def _meta(ctx: Context) -> dict[str, Any]:
    request = ctx.request_context
    meta = getattr(request, "meta", None) if request is not None else None
    return meta if isinstance(meta, dict) else {}


def _asked_level(ctx: Context) -> str | None:
    """The least severe level this request asked to be sent: its `_meta` opt-in (2026-07-28),
    else, on a handshake protocol version, the level the session set with `logging/setLevel`
    (kept by fastmcp per session); None when it asked for none."""
    level = _meta(ctx).get(LOG_LEVEL_META_KEY)
    if level in _LEVELS:
        return str(level)
    request = ctx.request_context
    if request is None or request.protocol_version in MODERN_PROTOCOL_VERSIONS:
        return None  # 2026-07-28: logging/setLevel is gone, the opt-in is per request
    levels = getattr(ctx.fastmcp, "_client_log_levels", {})
    level = levels.get(_session_key(request.session)) if isinstance(levels, dict) else None
    return str(level) if level in _LEVELS else None


def _session_key(session: Any) -> str:
    """How fastmcp keys a session's `logging/setLevel` (its connection's id, else one key)."""
    connection = getattr(session, "_connection", None)
    session_id = getattr(connection, "session_id", None)
    return session_id if isinstance(session_id, str) else "__no_session__"


async def log_if_asked(ctx: Context, level: LoggingLevel, message: str) -> bool:
    """Log `message` on stderr (INFO) and send it to the client when this request asked for
    log messages at `level` or below; True when sent.

    The notification goes out as such (`send_notification`, on this request's stream), not
    through the SDK's deprecated logging call, so no warning filter is needed anywhere.
    """
    logger.info(message)
    asked = _asked_level(ctx)
    if asked is None or _LEVELS.index(level) < _LEVELS.index(asked):
        return False
    request = ctx.request_context
    if request is None:  # pragma: no cover - a tool call always has one
        return False
    notification = LoggingMessageNotification(
        params=LoggingMessageNotificationParams(level=level, data=message, logger="ragbudget")
    )
    await request.session.send_notification(notification, related_request_id=ctx.request_id)
    return True


def _tiktoken_cache() -> Path | None:
    """The folder tiktoken reads its BPE files from, without changing the environment beyond
    pointing it at the files llama-index-core ships when nothing else is set (once)."""
    if "TIKTOKEN_CACHE_DIR" not in os.environ and "DATA_GYM_CACHE_DIR" not in os.environ:
        use_bundled_tiktoken_files()
    folder = os.environ.get("TIKTOKEN_CACHE_DIR") or os.environ.get("DATA_GYM_CACHE_DIR")
    if folder == "":
        return None  # caching disabled: tiktoken would download
    return Path(folder) if folder else Path(tempfile.gettempdir()) / "data-gym-cache"


@cache
def offline_counter(spec: str) -> TokenCounter | None:
    """The exact counter `spec` names when it can count with no network: a tiktoken encoding
    whose BPE file is in tiktoken's cache (llama-index-core ships cl100k_base and o200k_base).
    None otherwise (tiktoken not installed, another kind of counter, or the file absent)."""
    kind, _, encoding = spec.partition(":")
    if kind != "tiktoken" or encoding not in _TIKTOKEN_FILES:
        return None
    if importlib.util.find_spec("tiktoken") is None:
        return None
    folder = _tiktoken_cache()
    key = hashlib.sha1(_TIKTOKEN_FILES[encoding].encode()).hexdigest()  # tiktoken's cache key
    if folder is None or not (folder / key).is_file():
        return None
    try:
        return get_counter(spec)
    except Exception as exc:  # a broken install: the estimate it is
        logger.warning("cannot count with %s offline (%s): using the server's counter", spec, exc)
        return None
