"""Structured content and what a client's model reads of it.

Clients differ on which field of a tool result they give their model: Claude Code, Codex, VS
Code, Cursor and pydantic-ai send `JSON.stringify(structuredContent)` whenever it is present
and drop the text blocks; Gemini CLI and others read only the text; some send both. So:

- a result within its walls is measured as a client that forwards both reads it (the text
  blocks plus the structured content serialized as it goes on the wire: `wire_json`), which
  covers the other two rules too;
- a result that must be cut is first made text only (`text_only`): structured content that
  mirrors the text (fastmcp renders a list, dict or model return as JSON text and as the same
  value, or `{"result": value}`; the reference filesystem server sends `{"content": text}`)
  is dropped, other structured content becomes one more JSON
  text block. The cut's notice and handle are then in the one field every client forwards.
  The middleware lists budgeted tools without their output schema, since a cut result no
  longer carries the structured content a schema promises (as fastmcp's own response limiter
  does).
"""

from __future__ import annotations

from typing import Any

from fastmcp.tools import ToolResult
from mcp_types import ContentBlock, TextContent

from ragbudget.middleware.outcome import rebuild
from ragbudget.pages.json_trim import dumps, parse_json

__all__ = ["text_only", "wire_json"]


def wire_json(structured: dict[str, Any]) -> str:
    """Structured content as a client receives it: compact JSON, non-ASCII as is."""
    return dumps(structured)


def _mirrors(structured: dict[str, Any], texts: list[str]) -> bool:
    """Whether `structured` repeats the text: the same value, or one key holding it (fastmcp's
    `{"result": value}`, the reference filesystem server's `{"content": text}`)."""
    if len(texts) != 1:
        return False
    value = parse_json(texts[0])
    if value is not None and structured == value:
        return True
    if len(structured) != 1:
        return False
    (held,) = structured.values()
    return held == texts[0] or (value is not None and held == value)


def text_only(result: ToolResult) -> ToolResult:
    """`result` with no structured content, its text saying all it said: a mirror of the text
    is dropped, other structured content is added as one JSON text block (a copy; `result` is
    not changed)."""
    structured = result.structured_content
    if structured is None:
        return result
    texts = [b.text for b in result.content if isinstance(b, TextContent)]
    content: list[ContentBlock] = list(result.content)
    if not _mirrors(structured, texts):
        content.append(TextContent(type="text", text=wire_json(structured)))
    return rebuild(result, content, None)
