"""A stateful MCP server over streamable HTTP for the guard's tests: `python fake_http_server.py
PORT` on 127.0.0.1. Its tools: `remember` (keeps `value` for this session), `recall` (what this
session remembered), `sessions` (how many sessions have called it)."""

from __future__ import annotations

import sys

from fastmcp import Context, FastMCP

mcp = FastMCP("stateful")
SEEN: set[str] = set()


@mcp.tool
async def remember(value: str, ctx: Context) -> str:
    SEEN.add(ctx.session_id)
    await ctx.set_state("value", value)
    return value


@mcp.tool
async def recall(ctx: Context) -> str:
    SEEN.add(ctx.session_id)
    return str(await ctx.get_state("value"))


@mcp.tool
def sessions(ctx: Context) -> int:
    SEEN.add(ctx.session_id)
    return len(SEEN)


if __name__ == "__main__":
    mcp.run("http", host="127.0.0.1", port=int(sys.argv[1]), show_banner=False, log_level="WARNING")
