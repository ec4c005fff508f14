"""Re-ingest by stat: unchanged files are neither read nor hashed, a changed one alone is read."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from ragbudget_server.store import DocumentStore
from ragbudget_server.store import ingest as ingest_module

Snapshot = Callable[[DocumentStore], dict[str, tuple[Any, ...]]]

OLD = 1_600_000_000_000_000_000  # 2020: long before any ingest, so never racy


def _age(folder: Path) -> None:
    for path in folder.rglob("*"):
        os.utime(path, ns=(OLD, OLD))


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The files each ingest reads, by name."""
    seen: list[str] = []
    real = ingest_module.read_file

    def spy(path: Path, *args: Any) -> Any:
        seen.append(path.name)
        return real(path, *args)

    monkeypatch.setattr(ingest_module, "read_file", spy)
    return seen


def test_unchanged_tree_reads_no_file(
    tmp_path: Path, corpus: Path, reads: list[str], snapshot: Snapshot
) -> None:
    _age(corpus)
    store = DocumentStore(path=tmp_path / "db")
    first = store.ingest([corpus])
    assert len(reads) == first.files_seen
    before = snapshot(store)
    reads.clear()
    again = store.ingest([corpus])
    assert reads == []
    assert again.files_unchanged == again.files_seen == first.files_ingested
    assert again.chunks_added == again.chunks_deleted == again.sources_stale == 0
    assert snapshot(store) == before


def test_one_changed_file_is_the_only_one_read(
    tmp_path: Path, corpus: Path, reads: list[str], snapshot: Snapshot
) -> None:
    _age(corpus)
    store = DocumentStore(path=tmp_path / "db")
    store.ingest([corpus])
    target = corpus / "decoder.py"
    text = target.read_text(encoding="utf-8")
    same_size = text.replace("class JSONDecoder", "class JSONDecodes")
    assert len(same_size) == len(text) and same_size != text
    target.write_text(same_size, encoding="utf-8")
    os.utime(target, ns=(OLD + 10**9, OLD + 10**9))  # old, but not the stat stored
    reads.clear()
    report = store.ingest([corpus])
    assert reads == ["decoder.py"]
    assert report.files_ingested == 1 and report.files_unchanged == report.files_seen - 1
    fresh = DocumentStore(path=tmp_path / "fresh")
    fresh.ingest([corpus])
    assert snapshot(store) == snapshot(fresh)
    reads.clear()
    assert store.ingest([corpus]).files_unchanged == report.files_seen
    assert reads == []  # the changed file's new stat was recorded once it was written


def test_touched_file_is_hashed_once_then_known_by_its_stat(
    tmp_path: Path, corpus: Path, reads: list[str]
) -> None:
    _age(corpus)
    store = DocumentStore(path=tmp_path / "db")
    store.ingest([corpus])
    os.utime(corpus / "scanner.py", ns=(OLD + 10**9, OLD + 10**9))
    reads.clear()
    report = store.ingest([corpus])
    assert reads == ["scanner.py"] and report.files_ingested == 0
    reads.clear()
    store.ingest([corpus])
    assert reads == []


def test_recently_modified_files_are_always_read(
    tmp_path: Path, corpus: Path, reads: list[str]
) -> None:
    """A file modified just before its stat could change again within one timestamp tick."""
    soon = time.time_ns() + 600 * 10**9  # modified "now" for the whole test, however slow
    for path in corpus.iterdir():
        os.utime(path, ns=(soon, soon))
    store = DocumentStore(path=tmp_path / "db")
    first = store.ingest([corpus])
    reads.clear()
    again = store.ingest([corpus])
    assert len(reads) == first.files_seen and again.files_unchanged == first.files_seen


def test_a_table_of_another_collection_or_damaged_is_ignored(
    tmp_path: Path, corpus: Path, reads: list[str]
) -> None:
    _age(corpus)
    db = tmp_path / "db"
    DocumentStore(path=db, collection="first").ingest([corpus])
    table = db / "ragbudget-files-first.json"
    held = json.loads(table.read_text(encoding="utf-8"))
    assert sorted(Path(p).name for p in held["files"]) == sorted(p.name for p in corpus.iterdir())
    (db / "ragbudget-files-second.json").write_text(table.read_text(encoding="utf-8"))
    reads.clear()
    second = DocumentStore(path=db, collection="second").ingest([corpus])
    assert second.files_ingested == second.files_seen  # not the collection the table was for
    table.write_text("{not json")
    reads.clear()
    assert DocumentStore(path=db, collection="first").ingest([corpus]).files_ingested == 0
    assert len(reads) == second.files_seen  # read and hashed: nothing was lost


def test_deleted_file_is_pruned_and_forgotten(tmp_path: Path, corpus: Path) -> None:
    _age(corpus)
    db = tmp_path / "db"
    store = DocumentStore(path=db)
    store.ingest([corpus])
    (corpus / "tool.py").unlink()
    assert store.ingest([corpus]).sources_stale == 1
    report = store.ingest([corpus], prune=True)
    assert report.sources_pruned == 1 and report.chunks_deleted > 0
    held = json.loads((db / "ragbudget-files-documents.json").read_text(encoding="utf-8"))
    assert not any(p.endswith("/tool.py") for p in held["files"])
    assert (corpus / "tool.py").as_posix() not in store.sources()


@pytest.fixture
def full_queries(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """One entry per ingest that asked Chroma for every source (to find gone files)."""
    calls: list[int] = []
    real = ingest_module.gone_by_query

    def spy(*args: Any) -> Any:
        calls.append(1)
        return real(*args)

    monkeypatch.setattr(ingest_module, "gone_by_query", spy)
    return calls


def test_a_deleted_file_is_pruned_from_the_sources_the_table_knows(
    tmp_path: Path, corpus: Path, full_queries: list[int]
) -> None:
    _age(corpus)
    store = DocumentStore(path=tmp_path / "db")
    store.ingest([corpus])
    assert full_queries == [1]  # a new table: the sources come from Chroma
    assert store.ingest([corpus]).sources_stale == 0
    (corpus / "tool.py").unlink()
    assert store.ingest([corpus]).sources_stale == 1
    report = store.ingest([corpus], prune=True)
    assert report.sources_pruned == 1 and report.chunks_deleted > 0
    assert full_queries == [1]  # each later ingest knew the sources from the table
    assert (corpus / "tool.py").as_posix() not in store.sources()
    assert store.ingest([corpus], prune=True).sources_pruned == 0


def test_a_store_written_since_the_table_was_saved_is_asked_for_its_sources(
    tmp_path: Path, corpus: Path, full_queries: list[int]
) -> None:
    _age(corpus)
    db = tmp_path / "db"
    DocumentStore(path=db).ingest([corpus])
    table = db / "ragbudget-files-documents.json"
    saved = table.read_text(encoding="utf-8")
    extra = corpus / "extra.py"
    extra.write_text("def extra_function():\n    return 42\n", encoding="utf-8")
    _age(corpus)
    assert DocumentStore(path=db).ingest([corpus]).files_ingested == 1  # another process
    table.write_text(saved, encoding="utf-8")  # ... whose table was not saved (killed, older)
    extra.unlink()
    full_queries.clear()
    store = DocumentStore(path=db)
    report = store.ingest([corpus], prune=True)
    assert full_queries == [1] and report.sources_pruned == 1
    assert extra.as_posix() not in store.sources()


def test_a_record_written_straight_into_chroma_is_still_pruned(
    tmp_path: Path, corpus: Path, full_queries: list[int]
) -> None:
    _age(corpus)
    store = DocumentStore(path=tmp_path / "db")
    store.ingest([corpus])
    ghost = (corpus / "ghost.py").as_posix()
    other = DocumentStore(path=tmp_path / "db")  # another writer that keeps no table
    dim = len(other.collection.get(limit=1, include=["embeddings"])["embeddings"][0])
    other.collection.add(
        ids=["ghost-0"], documents=["def ghost():\n    pass\n"], embeddings=[[0.5] * dim],
        metadatas=[{"source": ghost, "chunk_index": 0, "chunk_count": 1}],
    )  # fmt: skip
    other.close()
    full_queries.clear()
    report = store.ingest([corpus], prune=True)
    assert full_queries == [1] and report.sources_pruned == 1
    assert ghost not in store.sources()


def test_a_file_left_out_is_not_read_again_until_it_changes(
    tmp_path: Path, corpus: Path, reads: list[str]
) -> None:
    (corpus / "empty.py").write_text("  \n", encoding="utf-8")
    (corpus / "blob.txt").write_bytes(b"\x00\x01\x02 not text \xff" * 64)
    cap = max(p.stat().st_size for p in corpus.iterdir())
    (corpus / "big.py").write_text("x = 1\n" * (cap // 6 + 1), encoding="utf-8")
    _age(corpus)
    store = DocumentStore(path=tmp_path / "db")
    first = store.ingest([corpus], max_file_bytes=cap)
    left_out = {Path(p.path).name: p.reason for p in first.files_skipped}
    assert sorted(left_out) == ["big.py", "blob.txt", "empty.py"]
    reads.clear()
    again = store.ingest([corpus], max_file_bytes=cap)
    assert reads == []  # neither read nor stat'ed beyond the walk's stat
    assert {Path(p.path).name: p.reason for p in again.files_skipped} == left_out
    assert again.files_unchanged + len(left_out) == again.files_seen
    reads.clear()  # other size caps: the files left out are read again
    bigger = store.ingest([corpus], max_file_bytes=2 * cap)
    assert sorted(reads) == sorted(left_out) and bigger.files_ingested == 1
    (corpus / "empty.py").write_text("def now_full():\n    return 1\n", encoding="utf-8")
    _age(corpus)
    reads.clear()
    changed = store.ingest([corpus], max_file_bytes=2 * cap)
    assert reads == ["empty.py"] and changed.files_ingested == 1
    assert sorted(Path(p.path).name for p in changed.files_skipped) == ["blob.txt"]
    (corpus / "blob.txt").unlink()
    store.ingest([corpus], max_file_bytes=2 * cap)
    held = json.loads((tmp_path / "db" / "ragbudget-files-documents.json").read_text())
    assert held["skipped"] == {}  # a gone file's entry goes
