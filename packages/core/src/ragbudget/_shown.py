"""Repeating a caller's input in a message without repeating all of it.

An error that echoes its argument is only as bounded as the argument: a 1 MB `source` must not
come back as a 1 MB error. Every message that quotes caller input goes through `shown`.
"""

from __future__ import annotations

__all__ = ["SHOWN_CHARS", "shown"]

SHOWN_CHARS = 80
"""Most characters of a caller's input a message repeats."""


def shown(value: object, limit: int = SHOWN_CHARS) -> str:
    """`repr(value)`, cut to its first `limit` characters plus `…` and the length when longer."""
    if isinstance(value, str):
        if len(value) <= limit:
            return repr(value)
        return f"{value[:limit]!r}… ({len(value):,} characters)"
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}…"
