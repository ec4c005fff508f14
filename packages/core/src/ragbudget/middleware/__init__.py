"""`TokenBudgetMiddleware`: every tool result of any FastMCP server within its client's walls.

Needs the `fastmcp` extra: `pip install 'ragbudget[fastmcp]'`. Each result (its text, its
structured content, an error) is budgeted against the walls of the client that reads it
(tokens, characters, bytes: `ragbudget.limits`); a result over them is cut at a boundary (JSON
stays valid JSON) with a notice, and the rest is served page by page by a `more` tool the
middleware adds. docs/middleware.md has the guide.

Its modules, one idea each: `token_budget` (the middleware), `clients` (which client calls,
its walls, what its model reads, what it may be told), `cut` (cutting a result, its notice, and
the `more` tool serving the rest) and `counts` (each text counted once a call; the counts a
server vouches for).

    from fastmcp import FastMCP
    from ragbudget.middleware import TokenBudgetMiddleware

    mcp = FastMCP("my-server")
    mcp.add_middleware(TokenBudgetMiddleware())  # or max_tokens=10_000, client="codex", walls=...
"""

from __future__ import annotations

try:
    import fastmcp as _fastmcp  # noqa: F401
    import mcp_types as _mcp_types  # noqa: F401
except ImportError as _import_error:
    msg = (
        "Please install `fastmcp` to use ragbudget's TokenBudgetMiddleware, you can use the "
        "`fastmcp` optional group: pip install 'ragbudget[fastmcp]'"
    )
    raise ImportError(msg) from _import_error

from ragbudget.limits import DEFAULT_MAX_TOKENS_CEILING, Walls
from ragbudget.middleware.clients import MIN_MAX_TOKENS, MIN_WALL_SIZE
from ragbudget.middleware.cut import ContinuationNameTaken
from ragbudget.middleware.token_budget import TokenBudgetMiddleware

__all__ = [
    "DEFAULT_MAX_TOKENS_CEILING",
    "MIN_MAX_TOKENS",
    "MIN_WALL_SIZE",
    "ContinuationNameTaken",
    "TokenBudgetMiddleware",
    "Walls",
]
