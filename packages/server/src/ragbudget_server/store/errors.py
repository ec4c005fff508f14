"""The store's error type."""

from __future__ import annotations

from ragbudget.errors import RagbudgetError

__all__ = ["BudgetTooSmall", "StoreError", "chroma_error", "damaged_store", "is_damaged"]

_DAMAGED = (
    "file is not a database",
    "database disk image is malformed",
    "malformed database schema",
    "database corruption",
    "(code: 11)",
    "(code: 26)",
)
_INDEX_DAMAGED = (
    "error loading hnsw index",
    "error creating hnsw segment reader",
    "error deserializing pickle file",
    "failed to apply logs to the hnsw segment writer",
)
"""What Chroma says of vector index files it cannot read (those it would crash on are checked
before it opens them: `store.vector_index`)."""


class StoreError(RagbudgetError, ValueError):
    """Bad input to the document store, or a store that cannot serve it.

    The message names the argument at fault and what to do about it, and is meant to be shown
    as is (the CLI prints it; the MCP server returns it as a tool error).
    """


class BudgetTooSmall(StoreError):
    """A budget below the smallest answer: `asked`, what it cannot hold, and the least budget
    that holds it (`needed`), as numbers (a caller that fitted the page to less than the ask
    restates them for the ask with `for_ask`, no text parsed)."""

    def __init__(self, asked: int, what: str, needed: int) -> None:
        self.asked, self.what, self.needed = asked, what, needed
        super().__init__(
            f"max_tokens={asked} cannot hold even {what}, which needs {needed} "
            f"{'token' if needed == 1 else 'tokens'}; use max_tokens >= {needed}"
        )

    def for_ask(self, asked: int, held_back: int) -> BudgetTooSmall:
        """The same error for a budget `asked` of which `held_back` was kept for other text."""
        return BudgetTooSmall(asked, self.what, self.needed + held_back)


def _damaged_part(exc: BaseException) -> str | None:
    """Which part of the store `exc` says is corrupt ("database": its SQLite file; "vector
    index"), or None (not merely locked or absent: not damaged)."""
    text = str(exc).lower()
    if any(marker in text for marker in _INDEX_DAMAGED):
        return "vector index"
    return "database" if any(marker in text for marker in _DAMAGED) else None


def is_damaged(exc: BaseException) -> bool:
    """True when `exc` says the store's SQLite file or its vector index is corrupt (not merely
    locked or absent)."""
    return _damaged_part(exc) is not None


def damaged_store(where: str, part: str, reason: str) -> StoreError:
    """The error for an embedded store whose `part` ("database", "vector index") is damaged:
    one line naming the store, the damage and how to rebuild it."""
    return StoreError(
        f"cannot open the store at {where}: its {part} is damaged ({reason}); rebuild it: move "
        "that folder away (or delete it) and run `ragbudget ingest` on your files again"
    )


def chroma_error(where: str, exc: BaseException, *, embedded: bool) -> StoreError:
    """Chroma's own error from the store at `where`, as the project's: one line naming the
    store and, for a damaged embedded store, how to rebuild it."""
    reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    part = _damaged_part(exc) if embedded else None
    if part is not None:
        return damaged_store(where, part, reason)
    return StoreError(f"the Chroma store at {where} failed: {reason}")
