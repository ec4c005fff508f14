"""Tool errors within the walls: a `ToolError` message is text a model reads like any result.

fastmcp turns an exception a tool raises (a `ToolError`, a validation error, or any other, as
its masking allows) into an error result whose one text block is the exception's message. An
error over the walls is cut as a text result would be (after a line, with a notice and a
`more` handle for the rest), and the blocks are joined into the one message the client gets;
it stays an error.
"""

from __future__ import annotations

from fastmcp.tools import ToolResult
from mcp_types import TextContent

from ragbudget.middleware.outcome import RETRIES, GuardOutcome
from ragbudget.middleware.result_guard import ResultGuard

__all__ = ["cut_error"]

SEPARATOR = "\n\n"
"""Between the kept part of the message and the notice."""


def cut_error(
    guard: ResultGuard, units: int, message: str, tool: str
) -> tuple[str, GuardOutcome] | None:
    """`message` cut to fit `units` (with what to report), or None when it fits as it is."""
    if guard.size(message, units) <= units:
        return None
    result = ToolResult(content=[TextContent(type="text", text=message)], is_error=True)
    target = units
    for _ in range(RETRIES):
        outcome = guard.cut(result, target, tool)
        blocks = [b.text for b in outcome.result.content if isinstance(b, TextContent)]
        text = SEPARATOR.join(block for block in blocks if block)
        used = guard.size(text, units)
        if used <= units:
            return text, outcome
        target -= used - units + 4  # the join cost more than the parts: ask for less
    notice = f"[ragbudget: error message left out: no part of it fit {units:,} units]"
    return notice, GuardOutcome(outcome.result, f"{tool}: {notice}")
