"""`ragbudget guard` when the wrapped server misbehaves: it does not start, exits mid-session,
hangs, writes something that is not MCP to stdout; the guard's own exit; secrets."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import IO, Any

import pytest
from guard_helpers import FAKE, GUARD, guard_params, texts
from mcp import Client
from mcp.shared.exceptions import MCPError
from processes import server_env
from ragbudget import get_counter

pytestmark = pytest.mark.process

FAKE_SERVER = [sys.executable, str(FAKE)]
SECRET = "s3cr3t-token-value-4242"


async def test_a_server_that_does_not_start_is_named_in_every_error() -> None:
    async with Client(guard_params(["/nonexistent/mcp-server"])) as client:
        with pytest.raises(MCPError, match=r"'mcp-server' could not be started: .*No such file"):
            await client.list_tools()
        result = await client.call_tool("echo", {"text": "hi"})
    assert result.is_error
    assert "the wrapped MCP server 'mcp-server' could not be started" in texts(result)[0]


async def test_a_server_that_exits_mid_session_is_an_error_then_starts_again() -> None:
    async with Client(guard_params(FAKE_SERVER)) as client:
        first = await client.call_tool("pid", {})
        died = await client.call_tool("die", {})
        assert died.is_error
        assert "'python fake_server.py' exited or closed the connection" in texts(died)[0]
        again = await client.call_tool("pid", {})
    assert not again.is_error and texts(again) != texts(first)


async def test_a_server_that_hangs_times_out_and_is_restarted() -> None:
    async with Client(guard_params(FAKE_SERVER, "--timeout", "2")) as client:
        first = await client.call_tool("pid", {})
        hung = await client.call_tool("hang", {})
        assert hung.is_error
        assert "'python fake_server.py' did not answer within 2 s" in texts(hung)[0]
        assert "restarted" in texts(hung)[0]
        again = await client.call_tool("pid", {})
    assert not again.is_error and texts(again) != texts(first)
    assert not _alive(int(texts(first)[0]))


async def test_garbage_on_stdout_is_named_in_the_error() -> None:
    async with Client(guard_params([*FAKE_SERVER, "garbage-at-start"], "--timeout", "2")) as c:
        assert texts(await c.call_tool("echo", {"text": "banner skipped"})) == ["banner skipped"]
        broken = await c.call_tool("garbage", {})
        assert broken.is_error
        message = texts(broken)[0]
        assert "'python fake_server.py' did not answer within 2 s" in message
        assert re.search("lines? to stdout that (is|are) not (an )?MCP messages?", message)
        assert "this is not JSON-RPC" in message
        assert texts(await c.call_tool("echo", {"text": "after"})) == ["after"]


async def test_a_server_that_writes_latin1_is_told_at_once_not_after_the_timeout() -> None:
    """Bytes that are not UTF-8 on the server's stdout: the SDK's strict reader stopped, and the
    call got a hang after the full `--timeout` (120 s); now an error naming the server, at once."""
    async with Client(guard_params([*FAKE_SERVER, "latin1-tools"])) as client:
        start = time.monotonic()
        with pytest.raises(MCPError) as listed:
            await client.list_tools()
        assert time.monotonic() - start < 30, "waited for the 120 s timeout"
        message = str(listed.value)
        assert "the wrapped MCP server 'python fake_server.py'" in message
        assert "not UTF-8" in message and "caf\\xe9" in message, message
        assert "did not answer" not in message
        # the session goes on: asked again, it says so again, at once
        with pytest.raises(MCPError, match="not UTF-8"):
            await client.list_tools()
        assert time.monotonic() - start < 30


async def test_a_tool_answer_that_is_not_utf8_is_a_tool_error_at_once() -> None:
    async with Client(guard_params(FAKE_SERVER)) as client:
        start = time.monotonic()
        broken = await client.call_tool("not-utf8", {})
        assert time.monotonic() - start < 30, "waited for the 120 s timeout"
        assert broken.is_error
        assert (
            "'python fake_server.py' wrote bytes to stdout that are not UTF-8" in texts(broken)[0]
        )
        assert texts(await client.call_tool("echo", {"text": "after"})) == ["after"]


async def test_an_upstream_error_of_a_million_cjk_characters_is_short_and_fast() -> None:
    # fastmcp logged such an error through rich's highlighter: 12 s for 40,000 characters,
    # still busy after 42 minutes for 1,000,000 (this test's timeout stops that). The error
    # quotes the start of the message, says how much it left out, and fits Codex's walls.
    options = ("--client", "codex", "--counter", "tiktoken:cl100k_base")
    async with Client(guard_params(FAKE_SERVER, *options)) as client:
        broken = await client.call_tool("rpc-error", {"size": "1000000"})
        assert broken.is_error
        (message,) = texts(broken)
        assert "漢字かな交じり文" in message and "more characters]" in message
        for spec in ("tiktoken:o200k_base", "tiktoken:cl100k_base"):
            assert get_counter(spec).count(message) <= 9_000, spec
        assert len(message.encode()) <= 38_000
        assert texts(await client.call_tool("echo", {"text": "still up"})) == ["still up"]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = f"/proc/{pid}/stat"
    if os.path.exists(stat):  # a zombie has exited; its parent just has not reaped it yet
        with open(stat, encoding="utf-8") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    return True


def _gone(pid: int, seconds: float = 15.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not _alive(pid):
            return True
        time.sleep(0.1)
    return False


class RawGuard:
    """The guard as a subprocess spoken to line by line, to watch its process and stderr."""

    def __init__(self, log: Path, *options: str, env: dict[str, str] | None = None) -> None:
        args = [*GUARD, *options, "--", *FAKE_SERVER]
        self.log = log
        self.proc = subprocess.Popen(
            args,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log.open("w"),
            env=env or server_env(),
            text=True,
        )
        self.ids = 0
        self.request(
            "initialize",
            {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "raw-test", "version": "1"},
            },
        )
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message: dict[str, Any]) -> None:
        stdin: IO[str] | None = self.proc.stdin
        assert stdin is not None
        stdin.write(json.dumps(message) + "\n")
        stdin.flush()

    def request(self, method: str, params: dict[str, Any]) -> Any:
        self.ids += 1
        self.send({"jsonrpc": "2.0", "id": self.ids, "method": method, "params": params})
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            message = json.loads(line)  # stdout holds protocol messages only
            if message.get("id") == self.ids:
                return message["result"]
        pytest.fail(f"the guard exited: {self.log.read_text()}")

    def close(self) -> str:
        """Close the guard's stdin; its stderr once it has exited."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=20)
        finally:
            self.proc.kill()
            self.proc.wait()
            self.proc.stdout.close()
        return self.log.read_text()

    def call(self, tool: str, **arguments: str) -> str:
        result = self.request("tools/call", {"name": tool, "arguments": arguments})
        return str(result["content"][0]["text"])


@pytest.mark.parametrize("ending", ["client closes stdin", "SIGTERM", "SIGKILL"])
def test_the_guard_ends_with_its_client_and_leaves_no_process(ending: str, tmp_path: Path) -> None:
    guard = RawGuard(tmp_path / "stderr.log")
    server = int(guard.call("pid"))
    assert _alive(server)
    if ending != "client closes stdin":
        guard.proc.send_signal(signal.SIGTERM if ending == "SIGTERM" else signal.SIGKILL)
        guard.proc.wait(timeout=20)
    guard.close()
    assert _gone(server), f"the wrapped server {server} outlived the guard ({ending})"


def test_environment_and_secrets_reach_the_wrapped_server_only(tmp_path: Path) -> None:
    env = {**server_env(), "GUARD_INHERITED": "from-the-client-config"}
    guard = RawGuard(
        tmp_path / "stderr.log", "--env", f"API_TOKEN={SECRET}", "--log-level", "DEBUG", env=env
    )
    try:
        assert guard.call("env", name="API_TOKEN") == SECRET
        assert guard.call("env", name="GUARD_INHERITED") == "from-the-client-config"
        failed = guard.call("die")
        assert "exited" in failed and SECRET not in failed
    finally:
        stderr = guard.close()
    assert "DEBUG" in stderr and SECRET not in stderr


async def test_secrets_in_the_url_are_redacted_from_errors() -> None:
    url = f"http://127.0.0.1:9/mcp?token={SECRET}"
    options = ("--url", url, "--header", f"Authorization=Bearer {SECRET}", "--startup-timeout", "3")
    async with Client(guard_params([], *options)) as client:
        with pytest.raises(MCPError) as raised:
            await client.list_tools()
        result = await client.call_tool("anything", {})
    assert "'http://127.0.0.1:9/mcp' could not be reached" in str(raised.value)
    assert SECRET not in str(raised.value) and SECRET not in texts(result)[0]
