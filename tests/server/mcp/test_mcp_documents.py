"""Documents through the MCP tools: `ingest` names every file it leaves out and prunes deleted
ones, `search` cites PDF pages, `read_document` opens a page, `stats` remembers the skips."""

from __future__ import annotations

import sys
from pathlib import Path

from fastmcp import Client
from mcp_helpers import COUNTER_SPEC, listing_of, page_of
from ragbudget_server.mcp import ServerSettings, create_server
from ragbudget_server.mcp.answers import ReadAnswer, SearchAnswer

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "store"))
from document_files import pdf_bytes, scanned_pdf_bytes


async def test_documents_through_the_tools(tmp_path: Path) -> None:
    root = tmp_path / "root"
    docs = root / "docs"
    docs.mkdir(parents=True)
    (docs / "atlas.pdf").write_bytes(pdf_bytes([
        "Maps of the northern coast.",
        "The lighthouse at Skerry Point has a red lamp.",
    ]))  # fmt: skip
    (docs / "scan.pdf").write_bytes(scanned_pdf_bytes())
    (docs / "gone.md").write_text("A note about the old ferry timetable.\n", encoding="utf-8")
    settings = ServerSettings(db=tmp_path / "db", counter=COUNTER_SPEC, allow_roots=(root,))
    async with Client(create_server(settings)) as client:
        first = await client.call_tool("ingest", {"paths": ["docs"]})
        found = await client.call_tool("search", {"query": "lighthouse red lamp"})
        response = SearchAnswer.model_validate(page_of(found))
        top = response.results[0]
        page = await client.call_tool(
            "read_document", {"source": top.source, "page": 2, "max_tokens": 500}
        )
        (docs / "gone.md").unlink()
        again = await client.call_tool("ingest", {"paths": ["docs"]})
        stats = await client.call_tool("stats", {})

    report = listing_of(first)
    assert report is not None
    skipped = {Path(p["path"]).name: p["reason"] for p in report["files_skipped"]}
    assert list(skipped) == ["scan.pdf"] and skipped["scan.pdf"].startswith("no text layer")
    assert top.source.endswith("atlas.pdf") and top.pages == "pages 1-2"  # one chunk, two pages
    assert "(pages 1-2)" in found.content[0].text  # type: ignore[union-attr]
    read = ReadAnswer.model_validate(page_of(page))  # where the page is; its text:
    text = page.content[0].text  # type: ignore[union-attr]
    assert "--- page 2 ---\nThe lighthouse" in text and read.pages == "page 2"
    assert listing_of(again)["sources_pruned"] == 1  # the MCP tool prunes by default
    listed = listing_of(stats)["store"]["files_skipped"]
    assert [Path(p["path"]).name for p in listed] == ["scan.pdf"]
    assert listing_of(stats)["store"]["files_skipped_count"] == 1
