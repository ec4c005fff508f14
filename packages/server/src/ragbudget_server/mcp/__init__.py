"""The ragbudget MCP server (`ragbudget serve`): budgeted search for desktop agents.

Part of `ragbudget-server`. Tools: `search`, `read_document`, `stats`, and `ingest` when the
server allows at least one root. The core's `ragbudget.middleware.TokenBudgetMiddleware` keeps
every tool result within a token budget (the server's last line of defence).

Names load lazily, so `ragbudget` (the CLI) can register `serve` without importing fastmcp or
Chroma until the command actually runs.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ragbudget_server.mcp.answers import BudgetExceededError
    from ragbudget_server.mcp.auth import BearerTokenVerifier
    from ragbudget_server.mcp.server import create_server, open_store
    from ragbudget_server.mcp.settings import DEFAULT_MAX_TOKENS_CEILING, ServerSettings
    from ragbudget_server.mcp.tools import ServerStats

_WHERE = {
    "BearerTokenVerifier": "ragbudget_server.mcp.auth",
    "BudgetExceededError": "ragbudget_server.mcp.answers",
    "DEFAULT_MAX_TOKENS_CEILING": "ragbudget_server.mcp.settings",
    "ServerSettings": "ragbudget_server.mcp.settings",
    "ServerStats": "ragbudget_server.mcp.tools",
    "create_server": "ragbudget_server.mcp.server",
    "open_store": "ragbudget_server.mcp.server",
}

__all__ = [
    "DEFAULT_MAX_TOKENS_CEILING",
    "BearerTokenVerifier",
    "BudgetExceededError",
    "ServerSettings",
    "ServerStats",
    "create_server",
    "open_store",
]


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        msg = f"module 'ragbudget_server.mcp' has no attribute {name!r}"
        raise AttributeError(msg)
    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
