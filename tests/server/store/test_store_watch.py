"""`ragbudget ingest --watch`: syncs on changes, and a sync killed midway ends as a clean ingest.

The watch itself needs `watchfiles`; its tests are skipped where it is not installed.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from ragbudget_server.store import DocumentStore, StoreError
from ragbudget_server.store.watch import watch

RAGBUDGET = Path(sys.executable).with_name("ragbudget")
COPIES = 40
"""Files one change adds: their chunks fill more than one of the ingest's batches (256)."""
Snapshot = Callable[[DocumentStore], dict[str, tuple[Any, ...]]]

# `ragbudget ingest --watch`, as the console script runs it, except that each Chroma add says
# "added" on stderr and then waits for a line on stdin. The test lets every add through until
# the copies' sync has written its first batch, and kills the watch there: mid-sync, whatever
# the machine's load.
WATCH = """
import sys
from chromadb.api.models.Collection import Collection
from ragbudget_server.cli import main

real_add = Collection.add

def add(self, *args, **kwargs):
    result = real_add(self, *args, **kwargs)
    print("added", file=sys.stderr, flush=True)
    if not sys.stdin.readline():
        raise SystemExit("the test closed stdin")
    return result

Collection.add = add
sys.argv = ["ragbudget", *sys.argv[1:]]
sys.exit(main())
"""


def _next_line(proc: subprocess.Popen[str], prefix: str, *, let_adds_through: bool = True) -> str:
    """The watch's next stderr line that starts with `prefix`; adds on the way go on."""
    assert proc.stdin is not None and proc.stderr is not None
    while line := proc.stderr.readline():
        if line.startswith(prefix):
            return line
        if line == "added\n" and let_adds_through:
            proc.stdin.write("\n")
            proc.stdin.flush()
    pytest.fail(f"the watch ended (exit {proc.wait()}) before a line starting {prefix!r}")


def test_watch_without_watchfiles_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setitem(sys.modules, "watchfiles", None)  # makes `import watchfiles` fail
    store = DocumentStore(path=tmp_path / "db")
    with pytest.raises(StoreError, match=r"^watching needs the watchfiles package: pip install"):
        watch(store, [tmp_path], on_sync=print)


@pytest.mark.process
def test_watch_syncs_and_a_killed_sync_ends_as_a_clean_ingest(
    tmp_path: Path, corpus: Path, snapshot: Snapshot
) -> None:
    pytest.importorskip("watchfiles")
    db = tmp_path / "db"
    env = {**os.environ, "ANONYMIZED_TELEMETRY": "False", "PYTHONUNBUFFERED": "1"}
    args = [str(RAGBUDGET), "ingest", str(corpus), "--db", str(db), "--prune"]
    proc = subprocess.Popen(
        [sys.executable, "-c", WATCH, *args[1:], "--watch"],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        _next_line(proc, "watching ")
        (corpus / "zoo.py").write_text("def zebra():\n    return 'quokka'\n")
        assert _next_line(proc, "synced: ").startswith("synced: 1 ingested")
        with DocumentStore(path=db) as store:
            assert (corpus / "zoo.py").as_posix() in store.sources()
        # A change whose sync writes several batches, and a kill once the first is written.
        (corpus / "scanner.py").unlink()
        source = (corpus / "decoder.py").read_text()
        for i in range(COPIES):
            (corpus / f"copy_{i:03}.py").write_text(f"# copy {i}\n{source}")
        _next_line(proc, "syncing ")
        _next_line(proc, "added", let_adds_through=False)  # the watch waits after its write
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.kill()
        proc.wait()
        for pipe in (proc.stdin, proc.stderr):
            if pipe is not None:
                pipe.close()
    with DocumentStore(path=db) as store:  # the kill landed mid-sync: some copies, not all
        copies = [s for s in store.sources() if "/copy_" in s]
    assert 0 < len(copies) < COPIES, len(copies)
    done = subprocess.run(args, capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    clean = tmp_path / "clean"
    with DocumentStore(path=clean) as store:
        store.ingest([corpus])
        expected = snapshot(store)
    with DocumentStore(path=db) as store:
        assert snapshot(store) == expected
    shutil.rmtree(clean)
