"""An ingest killed with SIGKILL midway, then run again, ends exactly as an uninterrupted one."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from ragbudget_server.store import DocumentStore
from ragbudget_server.store.hybrid import index_for

Snapshot = Callable[[DocumentStore], dict[str, tuple[Any, ...]]]

pytestmark = pytest.mark.process

WRITES = ("add", "update", "delete")

# The child announces each Chroma write and then waits inside the write sequence until the
# parent answers (a line on stdin: go on), so the parent's SIGKILL lands between two writes of
# one batch, the worst moment, and exactly after the write it chose, however loaded the machine.
CHILD = f"""
import sys
from chromadb.api.models.Collection import Collection
from ragbudget_server.store import DocumentStore

WRITES = {WRITES!r}

def announce(name, real):
    def wrapper(self, *args, **kwargs):
        result = real(self, *args, **kwargs)
        print(name, flush=True)
        if sys.argv[3] == "wait" and not sys.stdin.readline():
            raise SystemExit("the test closed stdin")
        return result
    return wrapper

for name in WRITES:
    setattr(Collection, name, announce(name, getattr(Collection, name)))
DocumentStore(path=sys.argv[1]).ingest([sys.argv[2]], batch_size=7)
print("finished", flush=True)
"""

FILES = ("utils.py", "charset.py", "parser.py", "header.py", "feedparser.py", "base64mime.py")


def _run_child(db: Path, corpus: Path, *, kill_after: tuple[str, int] | None) -> int:
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(db), str(corpus), "wait" if kill_after else "run"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert child.stdin is not None and child.stdout is not None
    seen = 0
    for line in child.stdout:
        write = line.strip()
        if not kill_after or write not in WRITES:
            continue
        if write == kill_after[0]:
            seen += 1
            if seen == kill_after[1]:
                child.send_signal(signal.SIGKILL)  # the child is waiting: nothing else written
                break
        child.stdin.write("\n")  # go on
        child.stdin.flush()
    code = child.wait(timeout=120)
    child.stdin.close()
    child.stdout.close()
    return code


def _edit(corpus: Path) -> None:
    """Change three files: one grows, one shrinks, one has a line renamed."""
    grow, shrink, rename = corpus / "utils.py", corpus / "charset.py", corpus / "parser.py"
    grow.write_text(grow.read_text() + "\n\ndef added_helper():\n    return 'new'\n" * 40)
    lines = shrink.read_text().splitlines(keepends=True)
    shrink.write_text("".join(lines[: len(lines) // 2]))
    rename.write_text(rename.read_text().replace("class Parser", "class RenamedParser"))


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
@pytest.mark.parametrize(
    ("scenario", "kill_after"),
    [
        ("fresh", ("add", 6)),  # midway through adding a file's chunks
        ("changed", ("add", 1)),  # new chunks added, stale ones not yet deleted
        ("changed", ("update", 1)),  # kept chunks half re-labelled
    ],
)
def test_sigkill_midway_then_rerun_equals_uninterrupted(
    tmp_path: Path,
    stdlib: Path,
    snapshot: Snapshot,
    scenario: str,
    kill_after: tuple[str, int],
) -> None:
    corpus = tmp_path / "email"
    corpus.mkdir()
    for name in FILES:
        shutil.copy(stdlib / "email" / name, corpus / name)
    killed_db, clean_db = tmp_path / "killed", tmp_path / "clean"
    if scenario == "changed":
        assert _run_child(killed_db, corpus, kill_after=None) == 0
        with DocumentStore(path=killed_db) as first:  # closed before another process writes
            before = snapshot(first)
        _edit(corpus)
    assert _run_child(killed_db, corpus, kill_after=kill_after) == -signal.SIGKILL

    clean = DocumentStore(path=clean_db)
    report = clean.ingest([corpus])
    want = snapshot(clean)
    interrupted = DocumentStore(path=killed_db)
    state = snapshot(interrupted)
    assert state != want  # the kill did land midway ...
    if scenario == "changed":
        assert state != before  # ... after some of the changes were written

    if scenario == "changed":  # the index, marked before the ingest wrote, says so
        assert "out of step" in interrupted.stats().lexical
    rerun = interrupted.ingest([corpus])
    assert interrupted.stats().lexical == "on"
    assert _lexical(interrupted) == _lexical(clean) == set(want)  # in step again
    assert rerun.files_unchanged + rerun.files_ingested == report.files_ingested
    assert rerun.files_unchanged > 0  # what was finished before the kill is not redone
    assert snapshot(interrupted) == want
    assert interrupted.ingest([corpus]).files_unchanged == report.files_ingested
    query = "parse headers"
    # The same answers; the cursor's key names each store's own history (its version), not
    # its content, so it differs between the two.
    assert _keyless(interrupted.search(query).to_text()) == _keyless(clean.search(query).to_text())
    hybrid = [store.search(query, hybrid=True).to_text() for store in (interrupted, clean)]
    assert _keyless(hybrid[0]) == _keyless(hybrid[1])


def _lexical(store: DocumentStore) -> set[str]:
    """The chunk ids the store's lexical index holds."""
    return index_for(store._backend).ids()


def _keyless(text: str) -> str:
    """`text` with each cursor's key blanked (its rank kept)."""
    return re.sub(r'cursor="[0-9a-f]+\.', 'cursor="KEY.', text)
