"""`ragbudget ingest --watch`: syncs on changes, and a sync killed midway ends as a clean ingest.

The watch itself needs `watchfiles`; its tests are skipped where it is not installed.
"""

from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from ragbudget_server.store import DocumentStore, StoreError
from ragbudget_server.store.watch import watch

RAGBUDGET = Path(sys.executable).with_name("ragbudget")
COPIES = 100
"""Files one change adds: a sync of them writes several batches, so a kill lands mid-sync."""
Snapshot = Callable[[DocumentStore], dict[str, tuple[Any, ...]]]


def _copies_written(db: Path) -> bool:
    """Whether Chroma's database holds a chunk of a copy yet (read-only; a locked or not yet
    created database reads as no). The size of the file is no sign: pruning writes first."""
    try:
        with closing(sqlite3.connect(f"file:{db / 'chroma.sqlite3'}?mode=ro", uri=True)) as con:
            row = con.execute(
                "SELECT 1 FROM embedding_metadata WHERE key = 'source' AND string_value LIKE ?"
                " LIMIT 1",
                ("%/copy_%",),
            ).fetchone()
    except sqlite3.Error:
        return False
    return row is not None


def test_watch_without_watchfiles_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setitem(sys.modules, "watchfiles", None)  # makes `import watchfiles` fail
    store = DocumentStore(path=tmp_path / "db")
    with pytest.raises(StoreError, match=r"^watching needs the watchfiles package: pip install"):
        watch(store, [tmp_path], on_sync=print)


def test_watch_syncs_and_a_killed_sync_ends_as_a_clean_ingest(
    tmp_path: Path, corpus: Path, snapshot: Snapshot
) -> None:
    pytest.importorskip("watchfiles")
    db = tmp_path / "db"
    env = {**os.environ, "ANONYMIZED_TELEMETRY": "False", "PYTHONUNBUFFERED": "1"}
    args = [str(RAGBUDGET), "ingest", str(corpus), "--db", str(db), "--prune"]
    proc = subprocess.Popen(
        [*args, "--watch"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env
    )
    assert proc.stderr is not None
    try:
        while not proc.stderr.readline().startswith("watching "):
            assert proc.poll() is None, "the watch stopped"
        (corpus / "zoo.py").write_text("def zebra():\n    return 'quokka'\n")
        while not (line := proc.stderr.readline()).startswith("synced: "):
            assert proc.poll() is None, "the watch stopped"
        assert line.startswith("synced: 1 ingested")
        with DocumentStore(path=db) as store:
            assert (corpus / "zoo.py").as_posix() in store.sources()
        # A change large enough that its sync takes a while, and a kill once it has begun.
        (corpus / "scanner.py").unlink()
        source = (corpus / "decoder.py").read_text()
        for i in range(COPIES):
            (corpus / f"copy_{i:03}.py").write_text(f"# copy {i}\n{source}")
        while not (line := proc.stderr.readline()).startswith("syncing "):
            assert proc.poll() is None, "the watch stopped"
        deadline = time.monotonic() + 120
        while not _copies_written(db) and time.monotonic() < deadline:
            time.sleep(0.05)  # until the sync's first batch of copies is written
        assert proc.poll() is None, "the sync ended before the kill"
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.kill()
        proc.wait()
    with DocumentStore(path=db) as store:  # the kill landed mid-sync: some copies, not all
        copies = [s for s in store.sources() if "/copy_" in s]
    assert 0 < len(copies) < COPIES, len(copies)
    done = subprocess.run(args, capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    clean = tmp_path / "clean"
    with DocumentStore(path=clean) as store:
        store.ingest([corpus])
        expected = snapshot(store)
    with DocumentStore(path=db) as store:
        assert snapshot(store) == expected
    shutil.rmtree(clean)
