"""A stdio MCP server whose tools return 5,000 rows as structured content: one with an output
schema (a model return, mirrored as JSON text by fastmcp), one without (a `ToolResult` whose
text is a one-line summary). Run by `ragbudget guard` in tests/guard/test_guard_model_view.py."""

from __future__ import annotations

from fastmcp import FastMCP
from fastmcp.tools import ToolResult
from mcp_types import TextContent
from pydantic import BaseModel

ROWS = [{"n": i, "label": f"row {i} of the table"} for i in range(5000)]


class Table(BaseModel):
    total: int
    rows: list[dict[str, object]]


mcp: FastMCP[None] = FastMCP("structured")


@mcp.tool
def table() -> Table:
    """5,000 rows under an output schema."""
    return Table(total=len(ROWS), rows=ROWS)


@mcp.tool
def raw_table() -> ToolResult:
    """5,000 rows as structured content of its own, no output schema."""
    return ToolResult(
        content=[TextContent(type="text", text="5,000 rows")],
        structured_content={"total": len(ROWS), "rows": ROWS},
    )


if __name__ == "__main__":
    mcp.run(show_banner=False)
