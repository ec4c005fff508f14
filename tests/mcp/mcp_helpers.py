"""Helpers for tests/mcp: what a client actually received, and how to launch the server."""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path
from typing import Any

from mcp_types import TextContent
from ragbudget import TokenCounter

COUNTER_SPEC = "tiktoken:cl100k_base"
"""The exact counter every test server measures budgets with."""


def text_blocks(result: Any) -> list[str]:
    """The text content blocks of a tool result, in order (what the model reads)."""
    blocks = []
    for block in result.content:
        assert isinstance(block, TextContent), f"unexpected content block {block!r}"
        blocks.append(block.text)
    return blocks


def visible_tokens(result: Any, counter: TokenCounter) -> int:
    """Tokens of every text block a client got, counted one by one and summed."""
    return sum(counter.count(text) for text in text_blocks(result))


def server_env() -> dict[str, str]:
    """Environment for `ragbudget serve` subprocesses (offline tiktoken files included)."""
    env = dict(os.environ)
    env["PYTHONUNBUFFERED"] = "1"
    env.pop("RAGBUDGET_AUTH_TOKEN", None)
    return env


def serve_command() -> list[str]:
    """`ragbudget serve` as installed (the console script next to this interpreter)."""
    script = Path(sys.executable).with_name("ragbudget")
    if script.exists():
        return [str(script), "serve"]
    return [sys.executable, "-m", "ragbudget.mcp", "serve"]  # pragma: no cover


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port
