"""`ragbudget guard --url`: one session with the wrapped server per guard connection (state kept
between calls), and a server that goes away named in the error, then reached again."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from guard_helpers import guard_params, texts
from mcp import Client
from processes import free_port, http_process, server_env, stop_process, wait_for_port

pytestmark = pytest.mark.process

SERVER = Path(__file__).with_name("fake_http_server.py")


def command(port: int) -> list[str]:
    return [sys.executable, str(SERVER), str(port)]


@contextmanager
def serving(port: int) -> Iterator[subprocess.Popen[bytes]]:
    """The stateful server on 127.0.0.1:`port` (the same port each time), stopped after."""
    proc = subprocess.Popen(
        command(port), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=server_env()
    )
    try:
        wait_for_port(port, proc)
        yield proc
    finally:
        stop_process(proc)


async def test_one_session_for_all_calls_and_its_state_kept() -> None:
    with http_process(command, server_env()) as url:
        async with Client(guard_params([], "--url", url)) as client:
            assert texts(await client.call_tool("remember", {"value": "kept"})) == ["kept"]
            for _ in range(3):
                assert texts(await client.call_tool("recall", {})) == ["kept"]
            assert texts(await client.call_tool("sessions", {})) == ["1"]


async def test_a_server_that_goes_away_is_named_then_reached_again() -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    options = ("--url", url, "--startup-timeout", "5", "--timeout", "10")
    with serving(port) as first:
        async with Client(guard_params([], *options)) as client:
            assert texts(await client.call_tool("remember", {"value": "first"})) == ["first"]
            stop_process(first)
            gone = await client.call_tool("recall", {})
            assert gone.is_error
            named = f"the wrapped MCP server {url!r} (could not be reached|exited or closed)"
            assert re.match(named, texts(gone)[0]), texts(gone)[0]
            with serving(port):
                # a new server, a new session: the old one's state is gone, calls work
                assert texts(await client.call_tool("recall", {})) == ["None"]
                assert texts(await client.call_tool("remember", {"value": "again"})) == ["again"]
                assert texts(await client.call_tool("recall", {})) == ["again"]
