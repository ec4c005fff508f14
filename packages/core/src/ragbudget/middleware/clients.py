"""The client: which one calls, the walls its results get, what its model reads of a result,
and what the middleware may tell it.

**Which walls.** A client stops reading at more than one wall (`ragbudget.limits`). By default
every result is budgeted against the profile of the client that called
(`profile_for(clientInfo.name)`, the default profile for a client no profile names); the
server may instead fix one profile for every client (`client=`), fix the walls (`walls=`), or
fix only the token wall (`max_tokens=`, the client's character and byte walls still apply).
Per-tool budgets replace the token wall (an int) or all the walls (a `Walls`) for that tool.

**Which client.** A 2026-07-28 request carries the client's name in its `_meta`; a
handshake-era session has it from `initialize`. `client_name` reads the request's first, else
the session's; the server's tools and the guard read it too.

**What its model reads.** Everything a block puts in front of a model (`visible_text`: its
text, or its base64 data), and the structured content as it goes on the wire (`wire_json`).

**What it is told.** A cut is told with an MCP log message only when the request asked for
one (`send_log`): MCP 2026-07-28 deprecates logging, and a server must not send
`notifications/message` unless the request carried a log level in its `_meta`
(`io.modelcontextprotocol/logLevel`), and then only at that level or above. Handshake-era
sessions keep their rules (every level may be sent; the server's `client_log_level`
filters). The notification is sent as a plain notification on the request's stream, so no
deprecated call is made and no process-wide warning filter is touched.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, get_args

import mcp_types as mt
from fastmcp import Context
from mcp.server.connection import allowed_log_levels
from mcp_types import (
    AudioContent,
    BlobResourceContents,
    ContentBlock,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
)

from ragbudget._checks import check_int
from ragbudget.counters import TokenCounter
from ragbudget.limits import (
    DEFAULT_PROFILE,
    PROFILES,
    ClientProfile,
    WalledCounter,
    Walls,
    profile_for,
)
from ragbudget.pages.json_trim import dumps

__all__ = [
    "CLIENT_INFO_META_KEY",
    "MIN_MAX_TOKENS",
    "MIN_WALL_SIZE",
    "ResolvedWalls",
    "WallPolicy",
    "client_name",
    "send_log",
    "visible_text",
    "wire_json",
]

logger = logging.getLogger(__name__)

CLIENT_INFO_META_KEY = "io.modelcontextprotocol/clientInfo"
"""Where a 2026-07-28 request's `_meta` names the client."""

MIN_MAX_TOKENS = 128
"""Below this a cut result could not hold its notice and a useful part of the result."""

MIN_WALL_SIZE = 1_024
"""The least character or byte wall: room for a notice (about 300 characters) and a page."""


@dataclass(frozen=True)
class ResolvedWalls:
    """The walls one result gets, and where they come from (for notices): what
    `WallPolicy.resolve` returns for a (tool, client)."""

    walls: Walls
    source: str
    """`profile codex`, `profile default`, or `walls set by the server`."""

    def counter(self, counter: TokenCounter) -> WalledCounter:
        """`counter` in budget units against these walls (stops at the first wall)."""
        return WalledCounter(counter, self.walls)


def _check_walls(name: str, walls: object) -> Walls:
    if not isinstance(walls, Walls):
        msg = f"{name} must be a ragbudget.limits.Walls, got {type(walls).__name__}"
        raise TypeError(msg)
    check_int(f"{name}.tokens", walls.tokens, minimum=MIN_MAX_TOKENS)
    for wall, value in (("chars", walls.chars), ("bytes", walls.bytes)):
        if value is not None and value < MIN_WALL_SIZE:
            msg = f"{name}.{wall} must be None or >= {MIN_WALL_SIZE:,}, got {value:,}"
            raise ValueError(msg)
    return walls


def _check_budget(name: str, value: object) -> int | Walls:
    if isinstance(value, Walls):
        return _check_walls(name, value)
    return check_int(name, value, minimum=MIN_MAX_TOKENS)


def _check_client(client: object) -> ClientProfile:
    names = [p.name for p in (*PROFILES, DEFAULT_PROFILE)]
    if not isinstance(client, str) or client not in names:
        msg = f"client must be one of {', '.join(names)} (or None: by the client's name), "
        msg += f"got {client!r}"
        raise ValueError(msg)
    return profile_for(None, client)


class WallPolicy:
    """The walls of each (tool, client): see the module docstring. `base_counter` is the
    counter as the caller gave it (its name picks Claude-token walls for the `claude` preset)."""

    def __init__(
        self,
        *,
        max_tokens: int | None,
        client: str | None,
        walls: Walls | None,
        tool_budgets: Mapping[str, int | Walls] | None,
        base_counter: TokenCounter,
    ) -> None:
        if max_tokens is not None:
            check_int("max_tokens", max_tokens, minimum=MIN_MAX_TOKENS)
        if walls is not None:
            _check_walls("walls", walls)
            if max_tokens is not None:
                msg = "give max_tokens or walls, not both (walls.tokens is the token wall)"
                raise ValueError(msg)
            if client is not None:
                msg = "give client (a profile) or walls, not both"
                raise ValueError(msg)
        self.profile = None if client is None else _check_client(client)
        self.max_tokens, self.walls, self.base_counter = max_tokens, walls, base_counter
        if tool_budgets is not None and not isinstance(tool_budgets, Mapping):
            msg = f"tool_budgets must be a mapping of tool names to budgets, got {tool_budgets!r}"
            raise TypeError(msg)
        self.tool_budgets = {
            name: _check_budget(f"tool_budgets[{name!r}]", budget)
            for name, budget in (tool_budgets or {}).items()
        }

    def for_client(self, client: str | None) -> ResolvedWalls:
        """The walls of any tool without a budget of its own, for the client named `client`."""
        if self.walls is not None:
            return ResolvedWalls(self.walls, "walls set by the server")
        profile = self.profile or profile_for(client)
        walls = profile.walls(self.base_counter)
        if self.max_tokens is not None:
            walls = walls.with_tokens(self.max_tokens)
        return ResolvedWalls(walls, f"profile {profile.name}")

    def resolve(self, tool: str, client: str | None) -> ResolvedWalls:
        """The walls of `tool`'s results for the client named `client`."""
        budget = self.for_client(client)
        own = self.tool_budgets.get(tool)
        if isinstance(own, Walls):
            return ResolvedWalls(own, f"walls set for {tool}")
        if own is not None:
            return ResolvedWalls(budget.walls.with_tokens(own), budget.source)
        return budget


def client_name(ctx: Context | None) -> str | None:
    """The `clientInfo.name` of the client making the current request, or None if unknown.

    The request's own `_meta` (`io.modelcontextprotocol/clientInfo`, MCP 2026-07-28) comes
    first: it names who sent this request. Else the session's, from `initialize` (the
    handshake protocol versions). An empty name is no name.
    """
    if ctx is None:
        return None
    rc = ctx.request_context
    if rc is None:
        return None
    meta: Any = getattr(rc, "meta", None)
    info: Any = meta.get(CLIENT_INFO_META_KEY) if isinstance(meta, dict) else None
    name = info.get("name") if isinstance(info, dict) else None
    if isinstance(name, str) and name:
        return name
    try:
        params = rc.session.client_params
    except AttributeError:  # pragma: no cover - a session without client params
        params = None
    if params is not None and params.client_info.name:
        return str(params.client_info.name)
    return None


def visible_text(block: ContentBlock) -> str:
    """What a block puts in front of a model, as text: its text, or its base64 data."""
    if isinstance(block, TextContent):
        return block.text
    if isinstance(block, (ImageContent, AudioContent)):
        return block.data
    if isinstance(block, EmbeddedResource):
        resource = block.resource
        return resource.blob if isinstance(resource, BlobResourceContents) else resource.text
    if isinstance(block, ResourceLink):
        return f"{block.name} {block.uri}"
    return ""  # pragma: no cover - the ContentBlock union has no other member


def wire_json(structured: dict[str, Any]) -> str:
    """Structured content as a client receives it: compact JSON, non-ASCII as is."""
    return dumps(structured)


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
