"""Read-only commands never create or modify a store; bad stores get one-line errors.

Each command runs as a real `ragbudget` process. Permissions mean nothing to root, so when the
suite runs as root the processes run as `nobody` (uid 65534) in a world-readable folder.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from ragbudget_server.store import DocumentStore, live

RAGBUDGET = Path(sys.executable).with_name("ragbudget")
NOBODY = 65534
AS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0
SETPRIV = shutil.which("setpriv")
AS_NOBODY = [SETPRIV or "setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
if not AS_ROOT:
    AS_NOBODY = []


pytestmark = [
    pytest.mark.process,
    pytest.mark.skipif(sys.platform == "win32", reason="POSIX permissions"),
    pytest.mark.skipif(AS_ROOT and SETPRIV is None, reason="root, and no setpriv to drop it"),
]


@pytest.fixture(scope="module", autouse=True)
def _others_can_run() -> None:
    """Skip, saying why, where `nobody` cannot start `ragbudget` from this checkout: a clone
    (or its Python) in a folder other users cannot enter, such as a home of mode 0700."""
    if not AS_NOBODY:
        return
    probe = subprocess.run(
        [*AS_NOBODY, str(RAGBUDGET), "--version"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    if probe.returncode != 0:
        pytest.skip(
            "the suite runs as root and these tests drop to `nobody`, who cannot start "
            f"{RAGBUDGET} (a clone in a 0700 folder?): {probe.stderr.strip()[:200]}"
        )


Listing = dict[str, tuple[int, int, int]]


def listing(folder: Path) -> Listing:
    """Every entry under `folder` (itself included): mode, size and modification time."""
    found: Listing = {}
    if not folder.exists() and not folder.is_symlink():
        return found
    st = folder.lstat()
    found["."] = (st.st_mode, st.st_size, st.st_mtime_ns)
    if stat.S_ISDIR(st.st_mode) and os.access(folder, os.R_OK | os.X_OK):
        for path in sorted(folder.rglob("*")):
            st = path.lstat()
            found[str(path.relative_to(folder))] = (st.st_mode, st.st_size, st.st_mtime_ns)
    return found


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """`ragbudget ARGS` in a new process (as `nobody` when the suite runs as root)."""
    env = {**os.environ, "ANONYMIZED_TELEMETRY": "False", "HOME": str(cwd), "COLUMNS": "40"}
    env["TMPDIR"] = str(_private_tmp(cwd))  # its snapshots, apart from any other run's
    for name in ("RAGBUDGET_DB", "RAGBUDGET_SERVER", "RAGBUDGET_COLLECTION"):
        env.pop(name, None)
    return subprocess.run(
        [*AS_NOBODY, str(RAGBUDGET), *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _private_tmp(place: Path) -> Path:
    """The temporary folder of the processes a test starts in `place`, writable by them."""
    tmp = place / "tmp"
    if not tmp.exists():
        tmp.mkdir()
        tmp.chmod(0o1777)
    return tmp


@pytest.fixture
def place() -> Iterator[Path]:
    """A folder the test's processes can reach whoever they run as."""
    folder = Path(tempfile.mkdtemp(prefix="ragbudget-ro-test-"))
    folder.chmod(0o755)
    yield folder
    for path in [folder, *folder.rglob("*")]:
        if not path.is_symlink():
            path.chmod(0o755 if path.is_dir() else 0o644)
    shutil.rmtree(folder)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, stdlib: Path) -> Path:
    """A small store, ingested once; tests copy it."""
    path = tmp_path_factory.mktemp("ro-built") / "db"
    with DocumentStore(path=path) as store:
        store.ingest([stdlib / "json"])
    return path


def _store_copy(built: Path, place: Path) -> Path:
    target = place / "db"
    shutil.copytree(built, target)
    for path in [target, *target.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
        if AS_ROOT:
            os.chown(path, NOBODY, NOBODY)
    return target


READS = [
    ("search", "decode JSON"),
    ("read", "json/decoder.py"),
    ("stats",),
]


def _one_line_error(result: subprocess.CompletedProcess[str], needle: str) -> None:
    assert result.returncode == 1, (result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ") and needle in lines[0], lines[0]
    assert "Traceback" not in result.stderr and result.stdout == ""


@pytest.mark.parametrize(
    ("kind", "command"),
    [
        ("missing", READS[0]),
        ("empty", READS[1]),
        ("source-folder", READS[2]),
        ("source-folder", READS[0]),
        ("unreadable", READS[0]),
        ("read-only", READS[2]),
    ],
)
def test_no_store_is_an_error_and_writes_nothing(
    place: Path, kind: str, command: tuple[str, ...]
) -> None:
    folder = place / "target"
    if kind != "missing":
        folder.mkdir()
    if kind == "source-folder":
        (folder / "main.py").write_text("print('hello')\n")
    if AS_ROOT and folder.exists():
        os.chown(folder, NOBODY, NOBODY)
    if kind == "unreadable":
        folder.chmod(0o000)
    if kind == "read-only":
        folder.chmod(0o555)
    before = listing(folder)
    result = run(*command, "--db", str(folder), cwd=place)
    if kind == "unreadable":
        _one_line_error(result, f"cannot read the store at {folder}: permission denied")
    else:
        _one_line_error(
            result,
            f"no ragbudget store at {folder}: run 'ragbudget ingest PATH --db {folder}' first",
        )
    assert listing(folder) == before


@pytest.mark.parametrize("command", READS, ids=[c[0] for c in READS])
def test_files_proc_and_corrupt_stores_are_one_line_errors(
    place: Path, command: tuple[str, ...], built: Path
) -> None:
    a_file = place / "notes.txt"
    a_file.write_text("not a store\n")
    corrupt = place / "corrupt"
    corrupt.mkdir()
    (corrupt / "chroma.sqlite3").write_bytes(b"this is not a database " * 200)
    truncated = _store_copy(built, place)
    with (truncated / "chroma.sqlite3").open("r+b") as f:
        f.truncate(50_000)
    cases = {
        a_file: f"path '{a_file}' is a file, not a database folder",
        Path("/proc"): "no ragbudget store at /proc",
        corrupt: f"cannot open the store at {corrupt}: ",
        truncated: f"cannot open the store at {truncated}: ",
    }
    for where, needle in cases.items():
        before = listing(where) if where != Path("/proc") else {}
        _one_line_error(run(*command, "--db", str(where), cwd=place), needle)
        assert (listing(where) if where != Path("/proc") else {}) == before, where
    assert not Path("/proc/chroma.sqlite3").exists()


@pytest.mark.parametrize("mode", ["files", "folder", "both"])
def test_a_read_only_store_can_be_searched_and_read(place: Path, built: Path, mode: str) -> None:
    db = _store_copy(built, place)
    if mode in ("files", "both"):
        for path in db.rglob("*"):
            path.chmod(0o555 if path.is_dir() else 0o444)
    if mode in ("folder", "both"):
        db.chmod(0o555)
    before = listing(db)
    found = run("search", "decode JSON", "--db", str(db), "--json", cwd=place)
    assert found.returncode == 0, found.stderr
    assert "decoder.py" in found.stdout
    read = run("read", "json/decoder.py", "--db", str(db), "--limit", "3", cwd=place)
    assert read.returncode == 0, read.stderr
    assert read.stdout.startswith('"""Implementation of JSONDecoder')
    stats = run("stats", "--db", str(db), "--json", cwd=place)
    assert stats.returncode == 0 and '"documents":5' in stats.stdout, stats.stderr
    refused = run("ingest", str(place), "--db", str(db), cwd=place)
    _one_line_error(refused, f"the store at {db} is read-only: ingest needs write access to it")
    assert listing(db) == before
    left = [p.name for p in _private_tmp(place).iterdir()]
    # The store's snapshot went when they ended; the search's cursor is kept (an hour) for
    # every process of the store, outside it.
    assert [name for name in left if not name.startswith("ragbudget-cursors-")] == []


def test_reading_a_writable_store_changes_no_content(place: Path, built: Path) -> None:
    """Chroma itself writes on every open (lock rows, an index file rewritten): the files may
    be touched, but no file is added or removed and the store's content stays the same."""
    db = _store_copy(built, place)
    names, generation = set(listing(db)), live.signature(db)
    with DocumentStore(path=db) as store:
        content = store.collection.get(include=["documents", "metadatas"])
    for command in READS:
        assert run(*command, "--db", str(db), cwd=place).returncode == 0
    assert set(listing(db)) == names and live.signature(db) == generation
    with DocumentStore(path=db) as store:
        assert store.collection.get(include=["documents", "metadatas"]) == content
