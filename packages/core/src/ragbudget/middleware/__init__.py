"""`TokenBudgetMiddleware`: every tool result of any FastMCP server within a token budget.

Needs the `fastmcp` extra: `pip install 'ragbudget[fastmcp]'`. A result over its budget is cut
at a boundary (JSON stays valid JSON) with a notice, and the rest is served page by page by a
`more` tool the middleware adds. docs/middleware.md has the guide.

    from fastmcp import FastMCP
    from ragbudget.middleware import TokenBudgetMiddleware

    mcp = FastMCP("my-server")
    mcp.add_middleware(TokenBudgetMiddleware(max_tokens=10_000))
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

from ragbudget.limits import DEFAULT_MAX_TOKENS_CEILING
from ragbudget.middleware.token_budget import MIN_MAX_TOKENS, TokenBudgetMiddleware

__all__ = ["DEFAULT_MAX_TOKENS_CEILING", "MIN_MAX_TOKENS", "TokenBudgetMiddleware"]
