"""Structured content under the walls: what mirrors the text, and what is checked against schemas.

A client may show the model a result's `content`, its `structuredContent`, or both, so both
are budgeted together: the text blocks plus the structured content serialized as it goes on
the wire (compact JSON, non-ASCII kept: `json_trim.dumps`).

fastmcp renders a list, dict or model return twice: as JSON text and as structured content
that *mirrors* it (the same value, or `{"result": value}` for a list or a scalar). A mirror is
shortened the same way as the text, so the two still agree; structured content of its own is
shortened separately to its share of the walls. Either way it must still match the tool's
output schema, or it is dropped with a note (and the server's author is told at WARNING).
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any, Literal

from pydantic import TypeAdapter, ValidationError

from ragbudget.counters import TokenCounter, count_up_to, stops_early
from ragbudget.middleware.json_trim import dumps

__all__ = [
    "Mirror",
    "MirrorCounter",
    "mirror_of",
    "parse_json",
    "schema_error",
    "wire_json",
]

Mirror = Literal["same", "wrap"]
"""How structured content mirrors the text: the same value, or `{"result": value}`."""


def wire_json(structured: dict[str, Any]) -> str:
    """Structured content as a client receives it: compact JSON, non-ASCII as is."""
    return dumps(structured)


def parse_json(text: str) -> Any:
    """The list or object `text` holds, or None when it is not one."""
    if not text.lstrip().startswith(("{", "[")):
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, (dict, list)) else None


def mirror_of(structured: dict[str, Any] | None, value: Any, text: str) -> Mirror | None:
    """How `structured` mirrors a text whose JSON value is `value` (None: not JSON), if it does."""
    if structured is None:
        return None
    if value is not None and structured == value:
        return "same"
    if structured == {"result": value if value is not None else text}:
        return "wrap"
    return None


def mirrored(mirror: Mirror, shown: Any) -> Any:
    """The structured content that mirrors a shown value (or text) as `mirror` says."""
    return shown if mirror == "same" else {"result": shown}


class MirrorCounter:
    """Counts a text and its `{"result": text}` mirror together: what a text page costs when
    the structured content repeats it."""

    exact = False

    def __init__(self, inner: TokenCounter) -> None:
        self.inner, self.name = inner, inner.name

    def count(self, text: str) -> int:
        return self.inner.count(text) + self.inner.count(wire_json({"result": text}))

    @property
    def stops_early(self) -> bool:
        return stops_early(self.inner)

    def count_up_to(self, text: str, limit: int) -> int:
        """As `count`, each part counted only up to what is left of `limit`."""
        used = count_up_to(self.inner, text, limit)
        if used > limit:
            return used
        return used + count_up_to(self.inner, wire_json({"result": text}), limit - used)


@lru_cache(maxsize=128)
def _adapter(schema: str) -> TypeAdapter[Any]:
    from fastmcp.utilities.json_schema_type import json_schema_to_type_adapter

    adapter: TypeAdapter[Any] = json_schema_to_type_adapter(json.loads(schema))
    return adapter


def schema_error(value: Any, schema: dict[str, Any] | None) -> str | None:
    """Why `value` is not structured content matching `schema` (None when it is, or when
    there is no schema and it is an object)."""
    if not isinstance(value, dict):
        return "not an object"
    if schema is None:
        return None
    try:
        _adapter(json.dumps(schema, sort_keys=True)).validate_python(value)
    except ValidationError as exc:
        return str(exc).splitlines()[0]
    return None
