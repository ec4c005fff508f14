"""`ragbudget serve` as a child process over stdio, the way desktop clients launch it."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client
from mcp_helpers import (
    COUNTER_SPEC,
    INITIALIZE,
    page_of,
    serve_command,
    serve_stdio,
    text_blocks,
    whole_answer,
)
from processes import server_env
from ragbudget import TokenCounter
from ragbudget_server.mcp.answers import SearchAnswer
from ragbudget_server.store import DocumentStore

pytestmark = pytest.mark.process


async def test_real_client_over_stdio(
    shared_store: DocumentStore, store_dir: Path, exact_counter: TokenCounter, tmp_path: Path
) -> None:
    transport = serve_stdio(
        "--db", str(store_dir), "--counter", COUNTER_SPEC, log_file=tmp_path / "stderr.log"
    )
    async with Client(transport) as client:
        names = {tool.name for tool in await client.list_tools()}
        result = await client.call_tool_mcp(
            "search", {"query": "string formatting operations", "limit": 40, "max_tokens": 700}
        )
    assert names == {"search", "read_document", "stats"}
    assert not result.is_error
    response = SearchAnswer.model_validate(page_of(result))
    assert response.truncated
    assert response.next_offset is not None
    assert exact_counter.count(whole_answer(result)) <= 700
    (text,) = text_blocks(result)
    assert response.budget.bound is not None and "(700-token budget)" in text
    assert f'cursor="{response.next_cursor}"' in text
    # At the default log level, stderr holds no DEBUG blocks (fastmcp's included).
    assert "DEBUG" not in (tmp_path / "stderr.log").read_text(errors="replace")


def _rpc(proc: subprocess.Popen[bytes], message: dict[str, Any]) -> None:
    assert proc.stdin is not None
    proc.stdin.write(json.dumps(message).encode() + b"\n")
    proc.stdin.flush()


def test_stdout_carries_only_protocol_messages(
    shared_store: DocumentStore, store_dir: Path, tmp_path: Path
) -> None:
    """Every byte on stdout is a JSON-RPC message, even with DEBUG logging on (logs -> stderr)."""
    args = ["--db", str(store_dir), "--counter", COUNTER_SPEC, "--log-level", "DEBUG"]
    stderr_path = tmp_path / "stderr.log"
    with stderr_path.open("wb") as stderr:  # a file, not a pipe: DEBUG logs cannot block it
        proc = subprocess.Popen(
            [*serve_command(), *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            env=server_env(),
        )
        try:
            lines = _exchange(proc)
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.wait(timeout=30)
    messages = [json.loads(line) for line in lines if line.strip()]
    assert all(message.get("jsonrpc") == "2.0" for message in messages), messages
    response = next(m for m in messages if m.get("id") == 2)
    assert response["result"]["isError"] is False
    assert "structuredContent" not in response["result"]
    assert page_of(response["result"])["truncated"] is True
    # MCP 2026-07-28: no log notification unless the request asked for a level (it did not);
    # the truncation is said in the answer's text, and logged on stderr
    assert not any(m.get("method") == "notifications/message" for m in messages)
    logs = stderr_path.read_text(errors="replace")
    assert "DEBUG" in logs, "logs go to stderr"


def _exchange(proc: subprocess.Popen[bytes]) -> list[bytes]:
    """initialize, a search that truncates, then EOF: every line the server wrote to stdout."""
    _rpc(proc, INITIALIZE)
    _rpc(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    arguments = {"query": "json decoder", "limit": 30, "max_tokens": 400}
    call = {"name": "search", "arguments": arguments}
    _rpc(proc, {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call})
    assert proc.stdout is not None
    assert proc.stdin is not None
    lines = []
    while True:
        line = proc.stdout.readline()
        assert line, "the server closed stdout before answering"
        lines.append(line)
        if json.loads(line).get("id") == 2:
            break
    proc.stdin.close()  # EOF: a stdio server exits
    lines.extend(proc.stdout.read().splitlines(keepends=True))
    return lines
