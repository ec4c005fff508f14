"""The MCP examples run as shipped: the stdio demo, and the Claude Desktop config's arguments."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import typer
from processes import server_env
from ragbudget_server.mcp.command import register

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


@pytest.mark.process
def test_mcp_demo_runs_offline_and_shows_truncation_and_paging() -> None:
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / "mcp_demo.py")],
        capture_output=True,
        text=True,
        env=server_env(),
        timeout=240,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    for tool in ("search", "read_document", "stats", "ingest"):
        assert re.search(rf"^  {tool}\s+read-only=", out, re.M), out
    assert "Use offset=" in out
    assert "search continued with offset=" in out
    assert re.search(r"read_document\(offset=\d+\) gives the next page", out), out
    for used, budget in re.findall(r"([\d,]+) of ([\d,]+) tokens in the text", out):
        assert int(used.replace(",", "")) <= int(budget.replace(",", ""))


def test_claude_desktop_config_arguments_parse_as_serve_options() -> None:
    config = json.loads((EXAMPLES / "claude_desktop_config.json").read_text())
    app = typer.Typer()
    register(app)

    @app.callback()
    def _root() -> None:
        """Root."""

    serve = typer.main.get_command(app).commands["serve"]  # type: ignore[attr-defined]
    servers = config["mcpServers"]
    assert servers
    for name, server in servers.items():
        args = server["args"]
        assert "serve" in args, name
        options = args[args.index("serve") + 1 :]
        context = serve.make_context("serve", list(options))
        assert context.params["db"] is not None, f"{name}: give --db an absolute path"
        assert Path(context.params["db"]).is_absolute()
