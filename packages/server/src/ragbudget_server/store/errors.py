"""The store's error type."""

from __future__ import annotations

from ragbudget.errors import RagbudgetError

__all__ = ["StoreError"]


class StoreError(RagbudgetError, ValueError):
    """Bad input to the document store, or a store that cannot serve it.

    The message names the argument at fault and what to do about it, and is meant to be shown
    as is (the CLI prints it; the MCP server returns it as a tool error).
    """
