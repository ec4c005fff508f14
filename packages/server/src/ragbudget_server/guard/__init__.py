"""`ragbudget guard`: the response guard for any MCP server, in any language.

`TokenBudgetMiddleware` guards FastMCP servers written in Python; the guard puts the same walls
and continuation in front of any other server, started as a stdio subprocess or reached over
streamable HTTP, through fastmcp's proxy. docs/guard.md has the guide.

    ragbudget guard --client claude-code -- npx -y @modelcontextprotocol/server-filesystem /data

Names load lazily, so the `ragbudget` command registers `guard` without importing fastmcp.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ragbudget_server.guard.backend import Backend, http_backend, stdio_backend
    from ragbudget_server.guard.command import make_budget, register
    from ragbudget_server.guard.proxy import build_guard

_WHERE = {
    "Backend": "ragbudget_server.guard.backend",
    "build_guard": "ragbudget_server.guard.proxy",
    "http_backend": "ragbudget_server.guard.backend",
    "make_budget": "ragbudget_server.guard.command",
    "register": "ragbudget_server.guard.command",
    "stdio_backend": "ragbudget_server.guard.backend",
}

__all__ = [
    "Backend",
    "build_guard",
    "http_backend",
    "make_budget",
    "register",
    "stdio_backend",
]


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        msg = f"module {__name__!r} has no attribute {name!r}"
        raise AttributeError(msg)
    return getattr(importlib.import_module(_WHERE[name]), name)


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
