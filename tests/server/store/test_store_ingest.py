"""Ingestion: what is stored, stable ids, changes, pruning, skips, and recovery from a crash."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from ragbudget_server.store import DocumentStore, StoreError
from ragbudget_server.store.ingest import RECIPE_VERSION, file_hash, plan_records

MakeStore = Callable[..., DocumentStore]
Snapshot = Callable[[DocumentStore], dict[str, tuple[Any, ...]]]


def test_ingest_stores_chunks_with_their_metadata(make_store: MakeStore, corpus: Path) -> None:
    store = make_store()
    report = store.ingest([corpus])
    files = sorted(corpus.glob("*.py"))
    assert report.files_seen == len(files)
    assert report.files_ingested == len(files)
    assert report.errors == [] and report.files_skipped == []
    assert report.chunks_added == store.collection.count() > len(files)
    got = store.collection.get(include=["documents", "metadatas"])
    for doc, meta in zip(got["documents"], got["metadatas"], strict=True):
        original = Path(meta["source"]).read_text(encoding="utf-8")
        start, end = meta["start_index"], meta["end_index"]
        assert original[start:end] == doc
        assert original.count("\n", 0, start) + 1 == meta["start_line"]
        assert meta["start_line"] <= meta["end_line"]
        assert meta["file_type"] == "py"
        assert meta["tokens"] == store.counter.count(doc) <= 512
        assert meta["counter"] == store.counter.name
        assert Path(meta["source"]).parent.as_posix() in meta["dirs"]
    assert {m["source"] for m in got["metadatas"]} == {f.as_posix() for f in files}


def test_ingest_again_changes_nothing(
    make_store: MakeStore, snapshot: Snapshot, corpus: Path
) -> None:
    store = make_store()
    store.ingest([corpus])
    before = snapshot(store)
    again = store.ingest([corpus])
    assert again.files_unchanged == again.files_seen and again.files_ingested == 0
    assert again.chunks_added == again.chunks_deleted == 0
    assert snapshot(store) == before


def test_changed_file_replaces_its_chunks(
    make_store: MakeStore, snapshot: Snapshot, corpus: Path
) -> None:
    store = make_store()
    store.ingest([corpus])
    target = corpus / "decoder.py"
    text = target.read_text(encoding="utf-8")
    target.write_text(text.replace("class JSONDecoder", "class RenamedDecoder"), encoding="utf-8")
    report = store.ingest([corpus])
    assert report.files_ingested == 1 and report.files_unchanged == report.files_seen - 1
    assert report.chunks_added >= 1 and report.chunks_deleted >= 1
    # Exactly what a fresh ingest of the changed files gives: nothing stale is left.
    fresh = make_store()
    fresh.ingest([corpus])
    assert snapshot(store) == snapshot(fresh)
    docs = store.collection.get(where={"source": target.as_posix()}, include=["documents"])
    assert not any("class JSONDecoder" in d for d in docs["documents"])


def test_prune_removes_deleted_files_only_when_asked(make_store: MakeStore, corpus: Path) -> None:
    store = make_store()
    store.ingest([corpus])
    gone = (corpus / "tool.py").as_posix()
    (corpus / "tool.py").unlink()
    kept = store.ingest([corpus])
    assert kept.sources_pruned == 0
    assert store.collection.get(where={"source": gone})["ids"]
    pruned = store.ingest([corpus], prune=True)
    assert pruned.sources_pruned == 1 and pruned.chunks_deleted > 0
    assert not store.collection.get(where={"source": gone})["ids"]
    assert gone not in store.sources()


def test_skips_binaries_ignored_and_tool_folders(make_store: MakeStore, tmp_path: Path) -> None:
    root = tmp_path / "project"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("def main():\n    return 'hello'\n", encoding="utf-8")
    (root / "notes.md").write_text("# Notes\n\nSome words about the app.\n", encoding="utf-8")
    (root / "image.bin").write_bytes(b"\x89PNG\x00\x01\x02" * 50)
    (root / "latin1.txt").write_bytes("caf\xe9 cr\xe8me".encode("latin-1"))
    (root / "empty.txt").write_text("  \n", encoding="utf-8")
    (root / "big.txt").write_text("word " * 5000, encoding="utf-8")
    (root / "debug.log").write_text("ignored by .gitignore\n", encoding="utf-8")
    (root / ".gitignore").write_text("*.log\nbuild/\n", encoding="utf-8")
    for folder in (".git", "node_modules", "__pycache__", ".venv", "build", "env"):
        (root / folder).mkdir()
        (root / folder / "x.txt").write_text("should not be read\n", encoding="utf-8")
    (root / "env" / "pyvenv.cfg").write_text("home = /usr\n", encoding="utf-8")
    store = make_store()
    report = store.ingest([root], max_file_bytes=10_000)
    assert sorted(Path(s).name for s in store.sources()) == ["app.py", "notes.md"]
    reasons = {Path(p.path).name: p.reason for p in report.files_skipped}
    assert set(reasons) == {"image.bin", "latin1.txt", "empty.txt", "big.txt"}
    assert "binary" in reasons["image.bin"] and "UTF-8" in reasons["latin1.txt"]
    assert "size cap" in reasons["big.txt"] and reasons["empty.txt"] == "empty"
    # A file named explicitly is taken even though .gitignore excludes it.
    store.ingest([root / "debug.log"])
    assert "debug.log" in {Path(s).name for s in store.sources()}


def test_unreadable_file_is_reported_and_the_rest_ingested(
    make_store: MakeStore, corpus: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bad = corpus / "scanner.py"
    real = Path.read_bytes

    def read_bytes(self: Path) -> bytes:
        if self == bad:
            raise PermissionError(13, "Permission denied", str(self))
        return real(self)

    monkeypatch.setattr(Path, "read_bytes", read_bytes)
    store = make_store()
    report = store.ingest([corpus])
    assert [Path(e.path).name for e in report.errors] == ["scanner.py"]
    assert "Permission denied" in report.errors[0].reason
    assert report.files_ingested == report.files_seen - 1
    assert bad.as_posix() not in store.sources()
    # An unreadable file is not a deleted one: prune keeps what was stored for it.
    monkeypatch.undo()
    store.ingest([corpus])
    monkeypatch.setattr(Path, "read_bytes", read_bytes)
    assert store.ingest([corpus], prune=True).sources_pruned == 0
    assert bad.as_posix() in store.sources()


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"chunk_tokens": 0}, "chunk_tokens"),
        ({"chunk_tokens": 10**9}, "chunk_tokens"),
        ({"overlap": -1}, "overlap"),
        ({"chunk_tokens": 100, "overlap": 100}, "overlap"),
        ({"max_file_bytes": 0}, "max_file_bytes"),
    ],
)
def test_bad_ingest_arguments(
    tmp_path: Path, corpus: Path, kwargs: dict[str, int], needle: str
) -> None:
    store = DocumentStore(path=tmp_path / "db")
    with pytest.raises(StoreError, match=needle):
        store.ingest([corpus], **kwargs)
    assert not (tmp_path / "db").exists()  # nothing half-written


def test_nonexistent_or_empty_paths_write_nothing(tmp_path: Path, corpus: Path) -> None:
    store = DocumentStore(path=tmp_path / "db")
    with pytest.raises(StoreError, match="does not exist: 'nope'"):
        store.ingest([corpus, "nope"])
    with pytest.raises(StoreError, match="paths must name at least one"):
        store.ingest([])
    assert not (tmp_path / "db").exists()


def _records(
    corpus: Path, store: DocumentStore, name: str
) -> list[tuple[str, str, dict[str, object]]]:
    path = corpus / name
    data = path.read_bytes()
    recipe = f"{RECIPE_VERSION}:512:64:{store.counter.name}"
    records = plan_records(
        path.as_posix(), data.decode(), file_hash(data, recipe),
        chunk_tokens=512, overlap=64, counter=store.counter,
    )  # fmt: skip
    return [(r.id, r.document, r.metadata) for r in records]


def test_recovers_from_every_interrupted_state(
    make_store: MakeStore, snapshot: Snapshot, corpus: Path
) -> None:
    """The states a killed ingest can leave, rebuilt by hand, each healed by the next run."""
    target = corpus / "encoder.py"
    store = make_store()
    store.ingest([corpus])
    old = store.collection.get(where={"source": target.as_posix()})["ids"]
    target.write_text(target.read_text(encoding="utf-8") + "\n\ndef added():\n    return 42\n")
    expected = make_store()
    expected.ingest([corpus])
    want = snapshot(expected)
    new = {i: (doc, meta) for i, doc, meta in _records(corpus, store, "encoder.py")}
    fresh_ids = [i for i in new if i not in old]
    # 1. Killed halfway through adding the new chunks (stale ones still there).
    half = fresh_ids[: max(1, len(fresh_ids) // 2)]
    store.collection.add(
        ids=half,
        documents=[new[i][0] for i in half],
        metadatas=[new[i][1] for i in half],
        embeddings=[np.frombuffer(want[i][2], dtype=np.float32) for i in half],
    )
    store.ingest([corpus])
    assert snapshot(store) == want
    # 2. Killed after the adds, before the stale chunks were deleted.
    target.write_text(target.read_text(encoding="utf-8") + "\n# one more line\n")
    expected2 = make_store()
    expected2.ingest([corpus])
    want2 = snapshot(expected2)
    held = snapshot(store)
    added = [i for i in want2 if i not in held]
    store.collection.add(
        ids=added,
        documents=[want2[i][0] for i in added],
        metadatas=[want2[i][1] for i in added],
        embeddings=[np.frombuffer(want2[i][2], dtype=np.float32) for i in added],
    )
    store.ingest([corpus])
    assert snapshot(store) == want2


def test_ids_are_stable_across_stores(
    make_store: MakeStore, snapshot: Snapshot, corpus: Path
) -> None:
    a, b = make_store(), make_store()
    a.ingest([corpus])
    b.ingest([corpus / "decoder.py", corpus])
    assert snapshot(a) == snapshot(b)


def test_progress_reports_every_file(make_store: MakeStore, corpus: Path) -> None:
    calls: list[tuple[int, int, str]] = []
    make_store().ingest([corpus], on_progress=lambda d, t, p: calls.append((d, t, p)))
    total = len(list(corpus.glob("*.py")))
    assert [c[0] for c in calls] == list(range(1, total + 1))
    assert {c[1] for c in calls} == {total}
    assert all(os.path.isabs(c[2]) for c in calls)
