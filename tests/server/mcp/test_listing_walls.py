"""`ingest` and `stats` answers fit the client that reads them, through the SDK client over stdio.

`ragbudget serve --allow-root` (the store's estimate counter) ingests a folder of 2,000 empty
files with long names (each skipped) for a client sending a profile's `clientInfo.name`, then
answers `stats`. Each answer, its JSON text block plus its structured content serialized as
compact JSON, stays within that profile's walls (exact o200k and cl100k tokens, characters,
UTF-8 bytes), is whole JSON (the server's guard did not cut it: no `ragbudget_cut` in `_meta`),
and says exactly how many entries it left out.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp_helpers import assert_within_walls, listing_of, serve_command, text_blocks, whole_answer
from mcp_types import Implementation
from processes import server_env
from ragbudget.limits import DEFAULT_PROFILE, profile_for

pytestmark = [pytest.mark.process, pytest.mark.slow]

SKIPPED = 2000
STEM = "a-file-with-a-rather-long-name-that-nothing-can-index-" * 2


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("listing") / "root"
    root.mkdir()
    for i in range(SKIPPED):
        (root / f"{STEM}{i:04d}.txt").write_text("")  # empty: skipped with its reason
    (root / "real.md").write_text("Some real text about quokkas.\n")
    return root


def _whole(result: Any) -> str:
    """The answer as `whole_answer` gives it, once its one block is checked to be the JSON."""
    (text,) = text_blocks(result)
    assert json.loads(text) and result.structured_content is None, "the text block is the JSON"
    return whole_answer(result)


async def _calls(root: Path, db: Path, name: str) -> tuple[Any, Any]:
    command = serve_command()
    args = [*command[1:], "--db", str(db), "--allow-root", str(root)]
    params = StdioServerParameters(command=command[0], args=args, env=server_env())
    async with (
        stdio_client(params, errlog=sys.stderr) as (read, write),
        ClientSession(read, write, client_info=Implementation(name=name, version="1")) as session,
    ):
        await session.initialize()
        ingest = await session.call_tool("ingest", {"paths": [str(root)]})
        stats = await session.call_tool("stats", {})
    return ingest, stats


@pytest.mark.parametrize(
    "name", ["github-copilot-developer", "github-copilot-cli", "some-other-agent"]
)
async def test_ingest_and_stats_answers_fit_the_walls_of_the_client(
    name: str, root: Path, tmp_path: Path
) -> None:
    profile = profile_for(name)
    assert profile.name == ("default" if name == "some-other-agent" else "copilot-cli")
    assert profile.name != "default" or profile == DEFAULT_PROFILE
    ingest, stats = await _calls(root, tmp_path / "db", name)
    for result in (ingest, stats):
        assert not result.is_error, result.content
        assert_within_walls(profile, _whole(result))
        meta = result.meta or {}
        assert "ragbudget_cut" not in json.dumps(meta), meta

    report = listing_of(ingest)
    assert report["files_seen"] == SKIPPED + 1 and report["files_ingested"] == 1
    listed = len(report["files_skipped"])
    assert 0 < listed < SKIPPED
    assert report["problems_omitted"] == SKIPPED - listed  # exact
    assert all(entry["reason"] == "empty" for entry in report["files_skipped"])
    assert ingest.meta["ragbudget"]["entries_omitted"] == SKIPPED - listed

    store = listing_of(stats)["store"]
    assert store["files_skipped_count"] == SKIPPED  # the count stays true
    assert 0 < len(store["files_skipped"]) <= SKIPPED
    assert listing_of(stats)["client_profile"] == profile.name
    omitted = stats.meta["ragbudget"]["entries_omitted"]
    assert omitted == SKIPPED - len(store["files_skipped"])
