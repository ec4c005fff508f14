"""The MCP Inspector's CLI, as a developer runs it by hand, gets a search answer within the walls.

`@modelcontextprotocol/inspector` (pinned, installed once into `.cache/npm/inspector` by
`node_servers.inspector`; skipped with the reason when npm cannot install it) runs
`mcp-inspector --cli <ragbudget serve ...> --method tools/call --tool-name search` with
`max_tokens=1000000` against a small store. The Inspector sends its own `clientInfo.name`, so
the server answers with the default profile; what it prints (the text blocks, and the
structured content as compact JSON, as `JSON.stringify` writes it) stays within the default
profile's walls by exact o200k tokens, characters (UTF-16 units) and UTF-8 bytes.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from mcp_helpers import assert_within_walls, serve_command
from node_servers import NodeServersUnavailable, inspector
from processes import server_env
from ragbudget import use_bundled_tiktoken_files
from ragbudget.limits import DEFAULT_PROFILE
from ragbudget_server.store import DocumentStore

pytestmark = [pytest.mark.process, pytest.mark.node, pytest.mark.slow]

TIMEOUT = 120.0
"""Seconds one Inspector run may take (it starts the server and makes one call)."""


@pytest.fixture(scope="module")
def inspector_cli() -> Path:
    try:
        folder = inspector()
    except NodeServersUnavailable as exc:
        pytest.skip(str(exc))
    return folder / "node_modules" / ".bin" / "mcp-inspector"


@pytest.fixture(scope="module")
def small_db(stdlib: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("inspector") / "db"
    store = DocumentStore(path=db)  # the estimate counter, as a new user builds it
    store.ingest([stdlib / "json", stdlib / "textwrap.py"])
    store.close()
    return db


def _inspect(cli: Path, db: Path, tmp_path: Path, *tool_args: str) -> dict[str, Any]:
    env = server_env()
    env["MCP_CATALOG_PATH"] = str(tmp_path / "catalog.json")  # not the user's ~/.mcp-inspector
    command = [str(cli), "--cli", *serve_command(), "--db", str(db)]
    command += ["--method", "tools/call", "--tool-name", "search"]
    for arg in tool_args:
        command += ["--tool-arg", arg]
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=TIMEOUT, env=env, cwd=tmp_path
    )
    assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-2000:])
    printed: dict[str, Any] = json.loads(done.stdout)
    return printed


def test_the_inspector_gets_a_search_answer_within_the_default_walls(
    inspector_cli: Path, small_db: Path, tmp_path: Path
) -> None:
    printed = _inspect(
        inspector_cli, small_db, tmp_path, "query=json decoder", "max_tokens=1000000", "limit=200"
    )
    assert printed.get("isError") is not True, printed
    texts = [block["text"] for block in printed["content"] if block["type"] == "text"]
    assert len(texts) == len(printed["content"]) == 1
    assert "structuredContent" not in printed  # the one text block is what every client forwards
    page = printed["_meta"]["ragbudget"]
    assert page["budget"]["profile"] == DEFAULT_PROFILE.name
    assert page["budget"]["requested_max_tokens"] == 1_000_000
    assert page["results"], "the store holds answers to this query"
    whole = texts[0]

    assert use_bundled_tiktoken_files()
    walls = DEFAULT_PROFILE.walls()
    assert walls.chars is not None and walls.bytes is not None  # all three walls are checked
    assert_within_walls(DEFAULT_PROFILE, whole)
    assert "ragbudget_cut" not in json.dumps(printed.get("_meta", {}))
