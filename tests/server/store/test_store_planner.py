"""The ingest's planning helper (a second process) changes nothing an ingest writes: the same
records and embeddings as an ingest that plans alone, the same error when planning fails, and a
helper that dies or fails leaves the ingest to plan the rest itself."""

from __future__ import annotations

import logging
import re
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from ragbudget_server.store import DocumentStore, StoreError
from ragbudget_server.store import planner as planner_module
from ragbudget_server.store.embedding import HashingEmbedding

Snapshot = Callable[[DocumentStore], dict[str, tuple[Any, ...]]]

pytestmark = pytest.mark.process

# A helper whose planning is changed by `{body}`, run with `prepare`'s arguments in scope
# (`task`, `calls`: how many files it was sent so far).
CHILD = """
import os, sys
from multiprocessing.connection import Connection
from ragbudget_server.store import planner, records

real, calls = records.prepare, [0]

def prepare(task, *args):
    calls[0] += 1
{body}
    return real(task, *args)

planner.prepare = prepare
planner._serve(Connection(int(sys.argv[1]), writable=False), Connection(int(sys.argv[2]), readable=False))
"""

MARK = "planner_marker_word"


@pytest.fixture
def tree(tmp_path: Path, stdlib: Path) -> Path:
    """The stdlib's email package (about 30 files), one file carrying a marker word."""
    target = tmp_path / "tree" / "email"
    shutil.copytree(stdlib / "email", target, ignore=shutil.ignore_patterns("__pycache__"))
    with (target / "parser.py").open("a", encoding="utf-8") as f:
        f.write(f"# {MARK}\n")
    return target


def _helper(monkeypatch: pytest.MonkeyPatch, body: str | None = None) -> None:
    """Every ingest of two files or more gets the helper (`body`: planning changed in it)."""
    monkeypatch.setattr(planner_module, "MIN_FILES", 2)
    monkeypatch.setattr(planner_module, "MIN_BYTES", 0)
    if body is not None:
        code = CHILD.format(body=body)
        monkeypatch.setattr(planner_module, "_command", lambda: [sys.executable, "-c", code])


def _alone(tmp_path: Path, tree: Path, snapshot: Snapshot) -> dict[str, tuple[Any, ...]]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(planner_module, "MIN_FILES", sys.maxsize)
        store = DocumentStore(path=tmp_path / "alone")
        store.ingest([tree], batch_size=64)
        return snapshot(store)


def _helped(caplog: pytest.LogCaptureFixture) -> int:
    found = [
        int(m.group(1))
        for r in caplog.records
        if (m := re.match(r"the planning helper planned (\d+) of", r.getMessage()))
    ]
    assert len(found) == 1
    return found[0]


def test_the_helper_writes_what_an_ingest_alone_writes(
    tmp_path: Path,
    tree: Path,
    snapshot: Snapshot,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    _helper(monkeypatch)
    caplog.set_level(logging.DEBUG, logger=planner_module.__name__)
    store = DocumentStore(path=tmp_path / "helped")
    report = store.ingest([tree], batch_size=64)
    assert report.files_ingested > 20 and not report.errors
    assert _helped(caplog) > 0  # the helper planned files (on a loaded machine, maybe few)
    assert snapshot(store) == _alone(tmp_path, tree, snapshot)


def test_a_file_the_helper_fails_on_is_planned_again_here(
    tmp_path: Path,
    tree: Path,
    snapshot: Snapshot,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    _helper(monkeypatch, f"    if '{MARK}' in task.path.read_text():\n        raise ValueError")
    store = DocumentStore(path=tmp_path / "helped")
    store.ingest([tree], batch_size=64)
    assert snapshot(store) == _alone(tmp_path, tree, snapshot)


def test_a_helper_that_dies_leaves_the_rest_to_the_ingest(
    tmp_path: Path,
    tree: Path,
    snapshot: Snapshot,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    _helper(monkeypatch, "    if calls[0] == 3:\n        os._exit(9)")
    caplog.set_level(logging.DEBUG, logger=planner_module.__name__)
    store = DocumentStore(path=tmp_path / "helped")
    report = store.ingest([tree], batch_size=64)
    assert report.files_ingested > 20 and not report.errors
    assert _helped(caplog) <= 2
    assert snapshot(store) == _alone(tmp_path, tree, snapshot)


def test_an_embedding_failure_is_the_same_store_error_and_the_next_ingest_repairs(
    tmp_path: Path, tree: Path, snapshot: Snapshot, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The helper cannot embed the marked file, and neither can the ingest's own embedding: the
    # ingest fails as it does without a helper, after writing the batches before that file.
    _helper(monkeypatch, f"    if '{MARK}' in task.path.read_text():\n        raise ValueError")
    real = HashingEmbedding._embed_one

    def embed_one(self: HashingEmbedding, text: str) -> Any:
        if MARK in text:
            raise RuntimeError("no vector for this one")
        return real(self, text)

    monkeypatch.setattr(HashingEmbedding, "_embed_one", embed_one)
    store = DocumentStore(path=tmp_path / "helped")
    with pytest.raises(StoreError, match="embedding 'hashing' failed: no vector for this one"):
        store.ingest([tree], batch_size=8)
    monkeypatch.setattr(HashingEmbedding, "_embed_one", real)
    report = store.ingest([tree], batch_size=8)
    assert report.files_ingested > 0
    assert snapshot(store) == _alone(tmp_path, tree, snapshot)
