"""A FastMCP server written the way third parties write theirs, for the middleware tests.

Its tools return what context bombs are made of: a ~200K-token log, a 5,000-item list, nested
dicts, unicode text, an image, a pydantic model with a list, and a small result. Run as a
script it serves over HTTP on 127.0.0.1 with `TokenBudgetMiddleware` added:

    python tests/middleware/third_party_server.py PORT MAX_TOKENS
"""

from __future__ import annotations

import sys
from typing import Any

from fastmcp import FastMCP
from fastmcp.utilities.types import Image
from pydantic import BaseModel, Field

LOG = "".join(
    f"2026-11-23T12:{i // 60 % 60:02d}:{i % 60:02d}Z INFO worker-{i % 7} GET /api/v1/items/{i} "
    f"status={200 if i % 13 else 500} bytes={i * 37 % 9000} took={i % 97}ms\n"
    for i in range(6500)
)
"""About 200,000 tokens of access log (cl100k)."""

ITEMS = [
    {"id": i, "name": f"item {i}", "tags": ["red", "grün", "青"][: i % 4]} for i in range(5000)
]

NESTED: dict[str, Any] = {
    "service": "billing",
    "summary": {"total": 5000, "by_status": {"ok": 4615, "error": 385}},
    "accounts": [
        {
            "id": f"acct-{i}",
            "owner": {"name": f"Owner {i}", "email": f"owner{i}@example.com"},
            "invoices": [{"n": n, "amount": n * 10 + i, "lines": ["a", "b"]} for n in range(20)],
        }
        for i in range(300)
    ],
    "notes": "Quarterly notes.\n" * 800,
}

UNICODE = "".join(
    f"{i:04d} Привет, мир. こんにちは世界。 مرحبا بالعالم 🌍🚀 Größe café naïve\n"
    for i in range(4000)
)

PNG_HEADER = b"\x89PNG\r\n\x1a\n"
BIG_IMAGE = PNG_HEADER + bytes(range(256)) * 400
SMALL_IMAGE = PNG_HEADER + b"tiny"

ONE_LONG_LINE = " ".join(f"word{i}." for i in range(60_000))
"""A single line far over any budget: the one case cut inside a line."""


class Report(BaseModel):
    """A typed result: fastmcp sends it as JSON text and as structured content."""

    title: str = Field(description="Report title.")
    rows: list[dict[str, int]] = Field(description="One row per item.")


class Strict(BaseModel):
    """A schema that shortening cannot keep: at least 3,000 rows."""

    rows: list[int] = Field(min_length=3000, description="All the rows.")


def build_server() -> FastMCP[Any]:
    mcp: FastMCP[Any] = FastMCP("third-party")

    @mcp.tool
    def read_log() -> str:
        """The service's whole access log."""
        return LOG

    @mcp.tool
    def list_items() -> list[dict[str, Any]]:
        """Every item."""
        return ITEMS

    @mcp.tool
    def account_tree() -> dict[str, Any]:
        """All accounts with their invoices."""
        return NESTED

    @mcp.tool
    def greetings() -> str:
        """Greetings in many scripts."""
        return UNICODE

    @mcp.tool
    def screenshot(small: bool = False) -> Image:
        """A screenshot."""
        return Image(data=SMALL_IMAGE if small else BIG_IMAGE, format="png")

    @mcp.tool
    def report(rows: int = 4000) -> Report:
        """A typed report."""
        return Report(title="usage", rows=[{"item": i, "uses": i * 3} for i in range(rows)])

    @mcp.tool
    def strict_rows() -> Strict:
        """Rows under a schema with a minimum."""
        return Strict(rows=list(range(20_000)))

    @mcp.tool
    def one_line() -> str:
        """A minified blob on one line."""
        return ONE_LONG_LINE

    @mcp.tool
    def status() -> dict[str, Any]:
        """A small result."""
        return {"ok": True, "version": "1.2.3", "note": "naïve café ☕"}

    return mcp


if __name__ == "__main__":
    from ragbudget import use_bundled_tiktoken_files
    from ragbudget.middleware import TokenBudgetMiddleware

    use_bundled_tiktoken_files()
    port, max_tokens = int(sys.argv[1]), int(sys.argv[2])
    server = build_server()
    server.add_middleware(TokenBudgetMiddleware(max_tokens, counter="tiktoken:cl100k_base"))
    server.run(transport="http", host="127.0.0.1", port=port, show_banner=False)
