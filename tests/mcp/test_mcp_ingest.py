"""The `ingest` tool: only under `--allow-root`, symlink escapes refused, progress reported."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client
from fastmcp.exceptions import ToolError
from mcp_helpers import COUNTER_SPEC
from ragbudget.mcp import ServerSettings, create_server
from ragbudget.store import SearchResponse

SECRET = "zanzibar-quokka-credential"


@pytest.fixture
def layout(tmp_path: Path, stdlib: Path) -> dict[str, Path]:
    """root/pkg holds two stdlib files and a link out; outside/ holds a secret."""
    root = tmp_path / "root"
    pkg = root / "pkg"
    pkg.mkdir(parents=True)
    shutil.copy(stdlib / "textwrap.py", pkg / "textwrap.py")
    shutil.copy(stdlib / "shlex.py", pkg / "shlex.py")
    outside = tmp_path / "outside"
    outside.mkdir()
    secret = outside / "secret.txt"
    secret.write_text(f"The password is {SECRET}.\n" * 5)
    (pkg / "link.txt").symlink_to(secret)
    (root / "escape").symlink_to(outside, target_is_directory=True)
    return {"root": root, "pkg": pkg, "outside": outside, "secret": secret, "db": tmp_path / "db"}


def _server(layout: dict[str, Path]) -> Any:
    settings = ServerSettings(db=layout["db"], counter=COUNTER_SPEC, allow_roots=(layout["root"],))
    return create_server(settings)  # opens its own store in the lifespan


async def test_ingest_indexes_under_the_root_with_progress(layout: dict[str, Path]) -> None:
    progress: list[tuple[float, float | None, str | None]] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append((done, total, message))

    async with Client(_server(layout)) as client:
        tools = {tool.name: tool for tool in await client.list_tools()}
        hints = tools["ingest"].annotations
        assert hints is not None
        assert hints.read_only_hint is False
        assert hints.idempotent_hint is True
        first = await client.call_tool("ingest", {"paths": ["pkg"]}, progress_handler=on_progress)
        again = await client.call_tool("ingest", {"paths": [str(layout["pkg"])]})
        found = await client.call_tool_mcp("search", {"query": "dedent wrap", "max_tokens": 2000})

    report = first.structured_content
    assert report is not None
    assert report["files_ingested"] == 2, report  # the link inside pkg/ is not followed
    assert report["chunks_added"] > 0
    assert progress, "ingest must report progress"
    assert progress[-1][0] == progress[-1][1]
    assert again.structured_content is not None
    assert again.structured_content["chunks_added"] == 0, "ingesting again changes nothing"
    assert again.structured_content["files_unchanged"] == 2
    sources = {r.source for r in SearchResponse.model_validate(found.structured_content).results}
    assert any(source.endswith("textwrap.py") for source in sources)


@pytest.mark.parametrize(
    "path",
    ["/etc", "{outside}", "{secret}", "escape", "escape/secret.txt", "pkg/link.txt", "../outside"],
)
async def test_paths_leaving_the_roots_are_refused(layout: dict[str, Path], path: str) -> None:
    given = path.format(outside=layout["outside"], secret=layout["secret"])
    async with Client(_server(layout)) as client:
        with pytest.raises(ToolError, match="outside the allowed roots"):
            await client.call_tool("ingest", {"paths": ["pkg", given]})
        # a refused call writes nothing: the collection was never even created
        with pytest.raises(ToolError, match="no ragbudget store at "):
            await client.call_tool("stats", {})


async def test_missing_paths_and_disabled_ingest(layout: dict[str, Path]) -> None:
    async with Client(_server(layout)) as client:
        with pytest.raises(ToolError, match="does not exist"):
            await client.call_tool("ingest", {"paths": ["no-such-dir"]})
        with pytest.raises(ToolError, match="paths"):
            await client.call_tool("ingest", {"paths": []})
    disabled = create_server(ServerSettings(db=layout["db"], counter=COUNTER_SPEC))
    async with Client(disabled) as client:
        assert "ingest" not in {tool.name for tool in await client.list_tools()}
        with pytest.raises(ToolError, match="ingest"):
            await client.call_tool("ingest", {"paths": [str(layout["pkg"])]})
