"""A store whose database has damaged bytes: every call names the store and how to rebuild it
(the library, the command line and the MCP tools), never a traceback nor Chroma's own error."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastmcp import Client
from fastmcp.exceptions import ToolError
from ragbudget_server.cli import app
from ragbudget_server.mcp import ServerSettings, create_server
from ragbudget_server.store import DocumentStore, StoreError
from typer.testing import CliRunner

DAMAGED = r"cannot open the store at .*db: its database is damaged \(.*\); rebuild it: move"


@pytest.fixture
def damaged(tmp_path: Path) -> tuple[Path, Path]:
    """A store with one document, then its SQLite file's header overwritten."""
    db, docs = _store(tmp_path)
    _damage(db)
    return db, docs


def _store(tmp_path: Path) -> tuple[Path, Path]:
    """A store holding one document: (its folder, the documents' folder)."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "notes.md").write_text("Pelicans nest on the north cliff.\n" * 20, encoding="utf-8")
    db = tmp_path / "db"
    with DocumentStore(path=db) as store:
        store.ingest([docs])
    return db, docs


def _damage(db: Path) -> None:
    """Overwrite the header of the store's SQLite file."""
    sqlite = db / "chroma.sqlite3"
    data = bytearray(sqlite.read_bytes())
    data[:100] = b"\xde\xad\xbe\xef" * 25
    sqlite.write_bytes(bytes(data))


def test_the_library_names_the_damaged_store(damaged: tuple[Path, Path]) -> None:
    db, docs = damaged
    for call in (
        lambda s: s.stats(),
        lambda s: s.search("pelicans"),
        lambda s: s.ingest([docs]),
    ):
        with pytest.raises(StoreError, match=DAMAGED):
            call(DocumentStore(path=db))


@pytest.mark.parametrize("command", [["stats"], ["search", "pelicans"], ["ingest", "{docs}"]])
def test_the_command_line_names_the_damaged_store(
    damaged: tuple[Path, Path], command: list[str]
) -> None:
    db, docs = damaged
    args = [a.format(docs=docs) for a in command]
    result = CliRunner().invoke(app, [*args, "--db", str(db)])
    assert result.exit_code == 1, result.output
    assert "database is damaged" in result.stderr and "rebuild it" in result.stderr, result.stderr
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)


async def test_the_mcp_server_names_the_damaged_store(tmp_path: Path) -> None:
    """Damaged before `serve`: the server does not start, and says why. Damaged while it
    serves: each tool's error says so."""
    db, docs = _store(tmp_path)
    settings = ServerSettings(db=db, allow_roots=(tmp_path,))
    async with Client(create_server(settings)) as client:
        await client.call_tool("stats", {})
        _damage(db)
        for tool, arguments in (
            ("stats", {}),
            ("search", {"query": "pelicans"}),
            ("ingest", {"paths": [str(docs)]}),
        ):
            with pytest.raises(ToolError, match=DAMAGED):
                await client.call_tool(tool, arguments)
    with pytest.raises(RuntimeError, match=DAMAGED):
        async with Client(create_server(settings)) as client:
            pass
