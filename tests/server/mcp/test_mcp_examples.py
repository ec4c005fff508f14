"""The MCP demo runs as shipped (the Claude Desktop configs: test_client_configs.py)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from processes import server_env

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
    assert 'search continued with cursor="' in out
    assert re.search(r"read_document\(offset=\d+\) gives the next page", out), out
    assert "`pip install ragbudget-server` gives the `ragbudget` command" in out
    # Each search block that shows a result cut says why, in a line of its own.
    for block in out.split("\n--- ")[1:]:
        if "(cut to fit)" in block.split("\nnotice:")[0]:
            assert re.search(
                r"^why \(cut to fit\): the [\d,]+-token budget could not hold", block, re.M
            ), block
    assert "why (cut to fit)" in out
    for used, budget in re.findall(r"([\d,]+) of ([\d,]+) tokens in the text", out):
        assert int(used.replace(",", "")) <= int(budget.replace(",", ""))
