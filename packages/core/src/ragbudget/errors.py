"""The base of every error ragbudget raises on purpose."""

from __future__ import annotations

__all__ = ["RagbudgetError"]


class RagbudgetError(Exception):
    """Base of ragbudget's own errors (`StoreError`, the MCP server's `BudgetExceededError`).

    Catch it to handle any of them; each subclass also keeps the built-in type callers relied
    on before it existed (`ValueError`). Messages name the argument at fault and what to do.
    """
