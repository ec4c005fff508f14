"""Helpers for tests/mcp: what a client actually received, and how to launch the server."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import pytest
from mcp_types import TextContent
from ragbudget import TokenCounter

COUNTER_SPEC = "tiktoken:cl100k_base"
"""The exact counter every test server measures budgets with."""

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "raw-test", "version": "0"},
    },
}
"""A raw JSON-RPC `initialize` request, as a client's first message."""

HEADERS = {"Accept": "application/json, text/event-stream"}
"""What a streamable HTTP client must accept."""


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


def wait_for_port(port: int, proc: subprocess.Popen[bytes], timeout: float = 60.0) -> None:
    """Return once `proc` listens on 127.0.0.1:`port`; fail the test if it exits or stalls."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
            pytest.fail(f"ragbudget serve exited with {proc.returncode}: {err}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    pytest.fail(f"ragbudget serve did not listen on {port} within {timeout}s")


@contextmanager
def http_server(
    args: list[str], env: dict[str, str], stderr: IO[bytes] | int = subprocess.PIPE
) -> Iterator[str]:
    """`ragbudget serve --transport http ARGS` on a free loopback port: yields its /mcp URL."""
    with http_process(
        lambda port: [*serve_command(), *args, "--transport", "http", "--port", str(port)],
        env,
        stderr,
    ) as url:
        yield url


@contextmanager
def http_process(
    command: Callable[[int], list[str]],
    env: dict[str, str],
    stderr: IO[bytes] | int = subprocess.PIPE,
) -> Iterator[str]:
    """`command(port)` started on a free loopback port and stopped after: yields its /mcp URL."""
    port = free_port()
    proc = subprocess.Popen(command(port), stdout=subprocess.DEVNULL, stderr=stderr, env=env)
    try:
        wait_for_port(port, proc)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        try:
            proc.communicate(timeout=15)
        except subprocess.TimeoutExpired:  # pragma: no cover
            proc.kill()
            proc.communicate()
