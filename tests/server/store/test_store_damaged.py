"""A store whose database has damaged bytes: every call names the store and how to rebuild it
(the library, the command line and the MCP tools), never a traceback nor Chroma's own error."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
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


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store of 1,200 records, enough for Chroma to write its vector index files (it writes
    them once a collection passes about 1,000; below, the vectors stay in SQLite)."""
    db, _ = _store(tmp_path_factory.mktemp("indexed"))
    with DocumentStore(path=db) as store:
        first = store.collection.get(limit=1, include=["metadatas"])["metadatas"][0]
        rng = np.random.default_rng(52)
        for at in range(0, 1200, 300):
            ids = [f"extra-{i}" for i in range(at, at + 300)]
            store.collection.add(
                ids=ids, embeddings=rng.random((300, 1024)).tolist(),
                documents=[f"record {i}" for i in range(at, at + 300)],
                metadatas=[{**first, "source": f"/extra/{i}.txt"} for i in range(at, at + 300)],
            )  # fmt: skip
    headers = [p for p in db.glob("*/header.bin") if p.stat().st_size]
    assert headers, "Chroma wrote no vector index files: the damage below would test nothing"
    return db


def _index_copy(db: Path, where: Path, damage: str) -> Path:
    import os
    import shutil

    copy = where / "db"
    shutil.copytree(db, copy)
    folder = next(p.parent for p in copy.glob("*/header.bin") if p.stat().st_size)
    target = {"header": "header.bin", "data": "data_level0.bin", "length": "length.bin"}
    kind, what = damage.split("-")
    path = folder / target[what]
    if kind == "truncated":
        os.truncate(path, path.stat().st_size // 2)
    else:  # garbled: the first 40 KB (the header: its fields after the version) random
        data = bytearray(path.read_bytes())
        start = 20 if what == "header" else 0
        end = min(len(data), start + (40 if what == "header" else 40_000))
        data[start:end] = np.random.default_rng(1).bytes(end - start)
        path.write_bytes(bytes(data))
    return copy


INDEX_DAMAGED = r"cannot open the store at .*db: its vector index is damaged \(.*\); rebuild it"


@pytest.mark.slow
@pytest.mark.parametrize(
    "damage",
    ["truncated-header", "garbled-header", "truncated-data", "garbled-data", "truncated-length"],
)
def test_a_damaged_vector_index_is_an_error_naming_the_store(
    indexed: Path, tmp_path: Path, damage: str
) -> None:
    # A truncated header.bin or garbled neighbour lists crashed the process in Chroma's native
    # code (SIGSEGV) on stats, search and ingest (issue 52): the files are checked first.
    db = _index_copy(indexed, tmp_path, damage)
    for call in (lambda s: s.stats(), lambda s: s.search("pelicans")):
        with pytest.raises(StoreError, match=INDEX_DAMAGED):
            call(DocumentStore(path=db))


@pytest.mark.slow
def test_a_healthy_vector_index_passes_the_check(indexed: Path, tmp_path: Path) -> None:
    import shutil

    copy = tmp_path / "db"
    shutil.copytree(indexed, copy)
    with DocumentStore(path=copy) as store:
        assert store.search("pelicans", limit=3).results


@pytest.mark.process
def test_the_command_line_survives_a_truncated_index_header(indexed: Path, tmp_path: Path) -> None:
    import subprocess
    import sys

    db = _index_copy(indexed, tmp_path, "truncated-header")
    for command in (["stats"], ["search", "pelicans"]):
        done = subprocess.run(
            [str(Path(sys.executable).parent / "ragbudget"), *command, "--db", str(db)],
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert done.returncode == 1, (done.returncode, done.stderr)  # not -11 (SIGSEGV)
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and re.search(INDEX_DAMAGED, lines[0]), done.stderr
