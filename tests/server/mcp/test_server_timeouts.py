"""`serve --server URL` against a Chroma server that accepts and never answers.

The server still answers `initialize` and lists its tools; every tool call reports the
timeout as its error, and the next call tries again. Timeouts are a fraction of a second.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client
from fastmcp.client.transports import StdioTransport
from mcp_helpers import serve_command, text_blocks
from processes import server_env
from ragbudget_server.mcp import ServerSettings, create_server

CALLS: list[tuple[str, dict[str, Any]]] = [
    ("stats", {}),
    ("search", {"query": "retries", "max_tokens": 500}),
    ("read_document", {"source": "notes.md"}),
    ("stats", {}),  # asked again: tried again, the same answer
]


def _expected(url: str, seconds: float) -> str:
    return (
        f"the Chroma server at {url} did not answer within {seconds:g} s (read timeout); "
        "check that it is up and not overloaded, or raise --read-timeout"
    )


async def _check(client: Client[Any], url: str, seconds: float) -> None:
    names = {tool.name for tool in await client.list_tools()}
    assert names == {"search", "read_document", "stats"}
    for tool, arguments in CALLS:
        result = await client.call_tool_mcp(tool, arguments)
        assert result.is_error, (tool, result)
        assert text_blocks(result) == [_expected(url, seconds)]


async def test_in_memory_server_answers_and_reports_the_timeout(silent_server: str) -> None:
    settings = ServerSettings(server=silent_server, read_timeout=0.3)
    async with Client(create_server(settings)) as client:
        await _check(client, silent_server, 0.3)


@pytest.mark.process
async def test_serve_over_stdio_answers_and_reports_the_timeout(
    silent_server: str, tmp_path: Path
) -> None:
    command = serve_command()
    env = {**server_env(), "RAGBUDGET_READ_TIMEOUT": "0.4"}
    transport = StdioTransport(
        command=command[0],
        args=[*command[1:], "--server", silent_server],
        env=env,
        keep_alive=False,
        log_file=tmp_path / "stderr.log",
    )
    async with Client(transport) as client:
        await _check(client, silent_server, 0.4)
    log = (tmp_path / "stderr.log").read_text(errors="replace")
    assert f"cannot open the store: {_expected(silent_server, 0.4)}" in log
    assert "Traceback" not in log


@pytest.mark.parametrize("name", ["connect_timeout", "read_timeout"])
def test_settings_refuse_bad_timeouts(name: str) -> None:
    with pytest.raises(ValueError, match=name):
        ServerSettings(server="http://127.0.0.1:9", **{name: 0})
