"""The ragbudget MCP server (`ragbudget serve`): budgeted search for desktop agents.

Needs the `mcp` extra (`pip install 'ragbudget[mcp]'`). Tools: `search`, `read_document`,
`stats`, and `ingest` when the server allows at least one root. `TokenBudgetMiddleware` keeps
any FastMCP server's tool results within a token budget (the server's last line of defence).

Names load lazily, so `ragbudget` (the CLI) can register `serve` without importing fastmcp or
Chroma until the command actually runs.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ragbudget.mcp.auth import BearerTokenVerifier
    from ragbudget.mcp.budgeting import BudgetExceededError, clamp_budget
    from ragbudget.mcp.middleware import TokenBudgetMiddleware
    from ragbudget.mcp.server import create_server, open_store
    from ragbudget.mcp.settings import DEFAULT_MAX_TOKENS_CEILING, ServerSettings
    from ragbudget.mcp.tools import ServerStats

_WHERE = {
    "BearerTokenVerifier": "ragbudget.mcp.auth",
    "BudgetExceededError": "ragbudget.mcp.budgeting",
    "DEFAULT_MAX_TOKENS_CEILING": "ragbudget.mcp.settings",
    "ServerSettings": "ragbudget.mcp.settings",
    "ServerStats": "ragbudget.mcp.tools",
    "TokenBudgetMiddleware": "ragbudget.mcp.middleware",
    "clamp_budget": "ragbudget.mcp.budgeting",
    "create_server": "ragbudget.mcp.server",
    "open_store": "ragbudget.mcp.server",
}

__all__ = [
    "DEFAULT_MAX_TOKENS_CEILING",
    "BearerTokenVerifier",
    "BudgetExceededError",
    "ServerSettings",
    "ServerStats",
    "TokenBudgetMiddleware",
    "clamp_budget",
    "create_server",
    "open_store",
]


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        msg = f"module 'ragbudget.mcp' has no attribute {name!r}"
        raise AttributeError(msg)
    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
