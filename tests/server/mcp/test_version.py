"""ragbudget names itself: `ragbudget --version`, and the MCP server's `serverInfo`."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from fastmcp import Client
from fastmcp.client.transports import StdioTransport
from mcp_helpers import serve_command
from processes import server_env
from ragbudget_server import __version__
from ragbudget_server.store import DocumentStore

pytestmark = pytest.mark.process


def test_version_option() -> None:
    command = serve_command()[0]
    done = subprocess.run([command, "--version"], capture_output=True, text=True, check=False)
    assert done.returncode == 0 and done.stdout == f"ragbudget {__version__}\n"


async def test_server_info_is_ragbudget_over_stdio(
    shared_store: DocumentStore, store_dir: Path, tmp_path: Path
) -> None:
    command = serve_command()
    for mode in ("legacy", "auto"):  # the initialize handshake, and server/discover
        transport = StdioTransport(
            command=command[0],
            args=[*command[1:], "--db", str(store_dir)],
            env=server_env(),
            keep_alive=False,
            log_file=tmp_path / "stderr.log",
        )
        async with Client(transport, mode=mode) as client:
            info = client.server_info
            assert info is not None, mode
            assert (info.name, info.version) == ("ragbudget", __version__), mode
            if mode == "legacy":
                assert client.initialize_result is not None
                assert client.initialize_result.server_info == info


def test_serve_without_a_store_stops_and_writes_nothing(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    for where in (empty, tmp_path / "missing"):
        done = subprocess.run(
            [*serve_command(), "--db", str(where)],
            capture_output=True, text=True, env=server_env(), stdin=subprocess.DEVNULL,
            timeout=120, check=False,
        )  # fmt: skip
        assert done.returncode == 1 and done.stdout == ""
        assert done.stderr == (
            f"ragbudget serve: no ragbudget store at {where}: "
            f"run 'ragbudget ingest PATH --db {where}' first\n"
        )
    assert list(empty.iterdir()) == [] and not (tmp_path / "missing").exists()
