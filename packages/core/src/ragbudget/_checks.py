"""Argument checks whose errors name the argument and what it must be."""

from __future__ import annotations

from typing import Any

__all__ = ["check_choice", "check_int"]


def check_int(name: str, value: Any, *, minimum: int) -> int:
    """`value` if it is an int (not a bool) >= `minimum`; else TypeError/ValueError naming it."""
    if isinstance(value, bool) or not isinstance(value, int):
        msg = f"{name} must be an int, got {value!r}"
        raise TypeError(msg)
    if value < minimum:
        msg = f"{name} must be >= {minimum}, got {value}"
        raise ValueError(msg)
    return value


def check_choice(name: str, value: Any, choices: tuple[str, ...]) -> None:
    """ValueError naming `name` unless `value` is one of `choices`."""
    if value not in choices:
        msg = f"{name} must be one of {', '.join(map(repr, choices))}, got {value!r}"
        raise ValueError(msg)
