"""Which walls a tool result gets: the connecting client's profile, or walls the server fixed.

A client stops reading at more than one wall (`ragbudget.limits`). By default every result is
budgeted against the profile of the client that called (`profile_for(clientInfo.name)`, the
default profile for a client no profile names); the server may instead fix one profile for
every client (`client=`), fix the walls (`walls=`), or fix only the token wall (`max_tokens=`,
the client's character and byte walls still apply). Per-tool budgets replace the token wall
(an int) or all the walls (a `Walls`) for that tool.

A 2026-07-28 request carries the client's name in its `_meta`; a handshake-era session has it
from `initialize`. `client_name` reads the request's first, else the session's; the server's
tools and the guard read it too.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from fastmcp import Context

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

__all__ = [
    "CLIENT_INFO_META_KEY",
    "MIN_MAX_TOKENS",
    "MIN_WALL_SIZE",
    "ResolvedWalls",
    "WallPolicy",
    "client_name",
]

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
