"""ragbudget-guard: the response guard for any MCP server, in any language.

`TokenBudgetMiddleware` guards FastMCP servers written in Python; the guard puts the same walls
and continuation in front of any other server, started as a stdio subprocess or reached over
streamable HTTP, through fastmcp's proxy. docs/guard.md has the guide.

    pip install ragbudget-guard    # or: pip install 'ragbudget[guard]'; no document store
    ragbudget-guard --client claude-code -- npx -y @modelcontextprotocol/server-filesystem /data

The application (`ragbudget-server`) installs it too and runs it as `ragbudget guard`.
`ragbudget_guard.logs` is where both commands send their log records (stderr).

Names load lazily, so the `ragbudget` command registers `guard` without importing fastmcp.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ragbudget_guard.backend import Backend, http_backend, stdio_backend
    from ragbudget_guard.command import make_budget, register
    from ragbudget_guard.proxy import build_guard

_WHERE = {
    "Backend": "ragbudget_guard.backend",
    "build_guard": "ragbudget_guard.proxy",
    "http_backend": "ragbudget_guard.backend",
    "make_budget": "ragbudget_guard.command",
    "register": "ragbudget_guard.command",
    "stdio_backend": "ragbudget_guard.backend",
}

__all__ = [
    "Backend",
    "build_guard",
    "http_backend",
    "make_budget",
    "register",
    "stdio_backend",
]

__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        msg = f"module {__name__!r} has no attribute {name!r}"
        raise AttributeError(msg)
    return getattr(importlib.import_module(_WHERE[name]), name)


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
