"""What cutting a result yields, shared by the guard and its cuts (text, errors, paging).

`GuardOutcome` is a cut result and what to report about it; `rebuild` makes the new result;
`RETRIES` bounds the attempts at a body and a notice within the budget; `META_KEY` names the
cut's figures in the result's `_meta`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from fastmcp.tools import ToolResult
from mcp_types import ContentBlock

__all__ = ["META_KEY", "RETRIES", "GuardOutcome", "rebuild"]

META_KEY = "ragbudget_cut"
"""Key of the cut's figures in a cut result's `_meta`."""

RETRIES = 6
"""Attempts at a body and notice within the budget (a notice's size depends on the body)."""


@dataclass
class GuardOutcome:
    """A cut result and what to report about it."""

    result: ToolResult
    summary: str
    problems: list[str] = field(default_factory=list)
    """What the server's author should fix (logged at WARNING)."""


def rebuild(
    result: ToolResult,
    content: list[ContentBlock],
    structured: dict[str, Any] | None,
    figures: dict[str, Any] | None = None,
) -> ToolResult:
    """A new result like `result` with other blocks and structured content (and cut figures)."""
    meta = result.meta if figures is None else {**(result.meta or {}), META_KEY: figures}
    return ToolResult(
        content=content, structured_content=structured, meta=meta, is_error=result.is_error
    )
