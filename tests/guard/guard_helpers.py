"""Helpers for the guard's tests: the guard command as a subprocess, walking `more` pages."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mcp import StdioServerParameters
from mcp_types import TextContent
from processes import server_env
from ragbudget.pages.remainder import find_more_call

GUARD = [sys.executable, "-c", "from ragbudget_guard.command import main; main()"]
"""`ragbudget-guard`, run by this interpreter (no console script needed)."""
FAKE = Path(__file__).with_name("fake_server.py")


def guard_params(
    server: Sequence[str], *options: str, env: dict[str, str] | None = None
) -> StdioServerParameters:
    """The official client's parameters to start the guard in front of `server`."""
    return StdioServerParameters(
        command=GUARD[0],
        args=[*GUARD[1:], *options, *(["--", *server] if server else [])],
        env=env or server_env(),
    )


def texts(result: Any) -> list[str]:
    return [block.text for block in result.content if isinstance(block, TextContent)]


async def pages(client: Any, first: Any) -> list[str]:
    """The body of every `more` page after `first`, following each page's notice."""
    call = find_more_call(texts(first)[-1])
    assert call is not None, texts(first)[-1]
    bodies: list[str] = []
    while call is not None:
        handle, offset = call
        page = await client.call_tool("more", {"handle": handle, "offset": offset})
        assert not page.is_error, texts(page)
        body, notice = texts(page)
        bodies.append(body)
        call = find_more_call(notice)
    return bodies
