"""The store's error type, and the budget its advice names."""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["StoreError", "least_budget"]


class StoreError(ValueError):
    """Bad input to the document store, or a store that cannot serve it.

    The message names the argument at fault and what to do about it, and is meant to be shown
    as is (the CLI prints it; the MCP server returns it as a tool error).
    """


def least_budget(needed: int, size_at: Callable[[int], int]) -> int:
    """The least budget whose own smallest response fits, for "use max_tokens >= N" advice.

    `needed` is the smallest response's size at the budget asked for and `size_at(m)` its size
    at budget `m`: the budget is written into the response (a notice, a cut marker), so a
    larger number can cost a token more.
    """
    for _ in range(8):
        again = size_at(needed)
        if again <= needed:
            break
        needed = again
    return needed
