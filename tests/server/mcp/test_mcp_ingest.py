"""The `ingest` tool: only under `--allow-root`, symlink escapes refused, progress reported."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client
from fastmcp.exceptions import ToolError
from mcp_helpers import COUNTER_SPEC, listing_of, page_of, visible_tokens
from ragbudget import TokenCounter
from ragbudget.text import shown
from ragbudget_server.mcp import ServerSettings, create_server
from ragbudget_server.mcp.answers import SearchAnswer
from ragbudget_server.mcp.reports import fit_report
from ragbudget_server.mcp.roots import linked_file_reason
from ragbudget_server.store import FileProblem, IngestReport

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

    report = listing_of(first)
    assert report is not None
    assert report["files_ingested"] == 2, report  # the link inside pkg/ is not followed
    assert report["chunks_added"] > 0
    assert progress, "ingest must report progress"
    assert progress[-1][0] == progress[-1][1]
    assert listing_of(again)["chunks_added"] == 0, "ingesting again changes nothing"
    assert listing_of(again)["files_unchanged"] == 2
    sources = {r.source for r in SearchAnswer.model_validate(page_of(found)).results}
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


def _refusal(raw: str, root: Path) -> str:
    return (
        f"paths: {shown(raw)} is outside the allowed roots ({root.resolve()}); "
        "only files under those roots can be ingested"
    )


async def test_refusals_reveal_neither_existence_nor_link_targets(layout: dict[str, Path]) -> None:
    outside, pkg = layout["outside"], layout["pkg"]
    (pkg / "dangling.txt").symlink_to(outside / "missing.txt")
    pairs = [  # (exists outside, does not): each pair must get the same answer
        (str(layout["secret"]), str(outside / "missing.txt")),
        ("pkg/link.txt", "pkg/dangling.txt"),
        ("../outside/secret.txt", "../outside/missing.txt"),
        ("escape/secret.txt", "escape/missing.txt"),
        ("/proc/self/cwd", "/proc/self/no-such-entry"),
    ]
    async with Client(_server(layout)) as client:
        for pair in pairs:
            for raw in pair:
                with pytest.raises(ToolError) as caught:
                    await client.call_tool("ingest", {"paths": [raw]})
                message = str(caught.value)
                assert message == _refusal(raw, layout["root"]), message
                assert str(outside) not in message or str(outside) in raw
                assert f"/proc/{os.getpid()}" not in message


async def test_hard_links_to_outside_files_are_refused(layout: dict[str, Path]) -> None:
    pkg = layout["pkg"]
    os.link(layout["secret"], pkg / "hard.txt")
    async with Client(_server(layout)) as client:
        walked = await client.call_tool("ingest", {"paths": ["pkg"]})
        named = await client.call_tool("ingest", {"paths": ["pkg/hard.txt"]})
        found = await client.call_tool_mcp("search", {"query": SECRET, "max_tokens": 4000})
    for report in (listing_of(walked), listing_of(named)):
        assert report is not None
        skipped = {Path(p["path"]).name: p["reason"] for p in report["files_skipped"]}
        assert skipped["hard.txt"].startswith("a hard link (2 names)"), skipped
        assert "--allow-hard-links" in skipped["hard.txt"]
    assert SECRET not in str(found.content)

    settings = ServerSettings(
        db=layout["db"], counter=COUNTER_SPEC, allow_roots=(layout["root"],), allow_hard_links=True
    )
    async with Client(create_server(settings)) as client:
        allowed = await client.call_tool("ingest", {"paths": ["pkg/hard.txt"]})
    assert listing_of(allowed)["files_ingested"] == 1


def test_a_file_on_another_file_system_than_its_root_is_refused() -> None:
    status = Path(f"/proc/{os.getpid()}/status")
    if not status.exists() or os.stat("/").st_dev == os.stat(status).st_dev:
        pytest.skip("needs /proc mounted as its own file system")
    reason = linked_file_reason(status, [Path("/")])
    assert reason is not None
    assert reason.startswith("on another file system than its root /")
    assert linked_file_reason(status, [Path("/proc")]) is None


async def test_the_report_fits_the_ceiling_however_many_files_are_skipped(
    tmp_path: Path, exact_counter: TokenCounter
) -> None:
    root = tmp_path / "root"
    (root / "empty").mkdir(parents=True)
    for i in range(300):
        (root / "empty" / f"file-{i:03d}.txt").write_text("")
    (root / "real.md").write_text("Some real text about quokkas.\n")
    settings = ServerSettings(
        db=tmp_path / "db", counter=COUNTER_SPEC, allow_roots=(root,), max_tokens_ceiling=256
    )
    async with Client(create_server(settings)) as client:
        result = await client.call_tool_mcp("ingest", {"paths": [str(root)]})
    assert not result.is_error, result
    assert visible_tokens(result, exact_counter) <= 256
    report = IngestReport.model_validate(listing_of(result))
    assert report.files_seen == 301 and report.files_ingested == 1
    assert report.problems_omitted == 300 - len(report.files_skipped) > 0
    assert report.files_skipped[0].reason == "empty"


def test_fit_report_leaves_a_small_report_alone(exact_counter: TokenCounter) -> None:
    report = IngestReport(files_seen=2, files_skipped=[FileProblem(path="a", reason="empty")])
    assert fit_report(report, 1000, exact_counter) is report
    cut = fit_report(report, 20, exact_counter)
    assert cut.files_skipped == [] and cut.problems_omitted == 1
    assert report.files_skipped, "the caller's report is not mutated"
