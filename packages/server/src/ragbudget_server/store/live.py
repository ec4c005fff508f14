"""One embedded store, several processes: opening it without writing, and noticing changes.

Chroma's embedded client keeps each collection's vector index (HNSW) in memory once loaded, so
a process that keeps a store open (a running `ragbudget serve`) never sees vectors another
process added later: its `get` reads SQLite and is current, its `query` is not. The only way to
drop that cache is to close the client and open a new one. `StoreWatch` tells when to: it keeps
the store's generation (the newest sequence numbers of Chroma's write log), which any write
changes, and costs one small read-only SQLite query to check.

`Gate` lets a refresh wait until no call is using the old client (the MCP server runs tool calls
in threads), and lets calls start again once the new client is open.

Chroma cannot open a store it may not write to (it runs `CREATE TABLE IF NOT EXISTS` on every
open, and SQLite refuses that on a read-only file or folder), so a read-only store is opened
from a private copy (`snapshot`), made again whenever the original changes.
"""

from __future__ import annotations

import atexit
import functools
import logging
import os
import shutil
import sqlite3
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any, Concatenate, ParamSpec, TypeVar

from ragbudget_server.store.errors import StoreError

__all__ = [
    "SQLITE_NAME",
    "Gate",
    "StoreWatch",
    "check_store_dir",
    "is_read_only_error",
    "is_writable",
    "no_store",
    "read_only",
    "reads",
    "records_signature",
    "remove_snapshot",
    "require_store_dir",
    "signature",
    "snapshot",
    "writes",
]

logger = logging.getLogger(__name__)

SQLITE_NAME = "chroma.sqlite3"
"""The file every embedded Chroma store has: its presence is what makes a folder a store."""

Signature = tuple[Any, ...] | None


def check_store_dir(path: Path) -> bool:
    """True if `path` holds a store, False if it holds none; a StoreError if it cannot be one.

    Never writes: a folder without a store stays untouched.
    """
    shown = str(path)
    try:
        if not path.exists():
            return False
        if not path.is_dir():
            msg = f"path {shown!r} is a file, not a database folder"
            raise StoreError(msg)
        database = path / SQLITE_NAME
        if not database.exists():
            os.listdir(path)  # an unreadable folder is its own error, not "no store"
            return False
        if not database.is_file():
            msg = f"the store at {shown} is damaged: {SQLITE_NAME} is not a file"
            raise StoreError(msg)
        if not os.access(path, os.R_OK | os.X_OK) or not os.access(database, os.R_OK):
            msg = f"cannot read the store at {shown}: permission denied"
            raise StoreError(msg)
    except PermissionError:
        msg = f"cannot read the store at {shown}: permission denied"
        raise StoreError(msg) from None
    except OSError as exc:
        msg = f"cannot read the store at {shown}: {exc.strerror or exc}"
        raise StoreError(msg) from None
    return True


def require_store_dir(path: Path) -> None:
    """Nothing if `path` holds a store, else its StoreError (`check_store_dir`, `no_store`):
    for what only reads a store, before Chroma loads. Never writes."""
    if not check_store_dir(path):
        raise no_store(path)


def is_read_only_error(exc: BaseException) -> bool:
    """True when Chroma failed to open a store because SQLite may not write to it."""
    text = str(exc).lower()
    return "readonly database" in text or "read-only file system" in text


def no_store(path: Path | str) -> StoreError:
    """The error for reading a folder that holds no store."""
    return StoreError(
        f"no ragbudget store at {path}: run 'ragbudget ingest PATH --db {path}' first"
    )


def read_only(path: Path) -> StoreError:
    """The error for writing a store this process may only read."""
    return StoreError(f"the store at {path} is read-only: ingest needs write access to it")


def is_writable(path: Path) -> bool:
    """Whether this process may write the store's folder and its database file."""
    database = path / SQLITE_NAME
    return os.access(path, os.W_OK | os.X_OK) and os.access(database, os.W_OK)


def snapshot(path: Path) -> Path:
    """A private copy of the read-only store at `path`, in a new temporary folder."""
    target = Path(tempfile.mkdtemp(prefix="ragbudget-readonly-"))
    try:
        shutil.copytree(path, target / "store", ignore=shutil.ignore_patterns("*.lock"))
        for folder, dirs, files in os.walk(target):  # copies keep the read-only modes
            for name in (*dirs, *files):
                os.chmod(Path(folder) / name, 0o700 if name in dirs else 0o600)
    except OSError as exc:
        shutil.rmtree(target, ignore_errors=True)
        msg = f"the store at {path} is read-only and copying it failed: {exc}"
        raise StoreError(msg) from None
    atexit.register(shutil.rmtree, target, ignore_errors=True)
    logger.info("the store at %s is read-only: reading a copy of it in %s", path, target)
    return target / "store"


def remove_snapshot(copy: Path) -> None:
    shutil.rmtree(copy.parent, ignore_errors=True)


_GENERATION = (
    "SELECT (SELECT max(seq_id) FROM embeddings_queue),"
    " (SELECT group_concat(segment_id || ':' || seq_id) FROM max_seq_id),"
    " (SELECT group_concat(id || ':' || name) FROM collections),"
    " (SELECT count(*) FROM collection_metadata)"
)


def signature(path: Path) -> Signature:
    """What changes whenever anything writes the store's content (None: no store to read).

    Every write to a collection (add, update, delete) goes through Chroma's log with a new
    sequence number, and applying it to the vector index moves the segment's `max_seq_id`: so
    the newest sequence numbers, and the collections, name the store's content. Files' times
    would not do: Chroma rewrites some of them (and adds lock rows) whenever a client opens.
    """
    database = path / SQLITE_NAME
    if not database.is_file():
        return None
    try:
        uri = f"{database.resolve().as_uri()}?mode=ro"
        with closing(sqlite3.connect(uri, uri=True, timeout=5)) as conn:
            row = conn.execute(_GENERATION).fetchone()
    except (sqlite3.Error, OSError) as exc:
        logger.debug("cannot read the generation of %s: %s", path, exc)
        return None
    return tuple(row)


def records_signature(path: Path) -> Signature:
    """What changes whenever a record of the store is written or a collection made anew (None:
    no store to read): `signature` without the count of collections' metadata keys, which a
    version bump may change without a record written."""
    found = signature(path)
    return None if found is None else found[:3]


class StoreWatch:
    """Remembers the generation of an embedded store as its client last saw it.

    Checking reads the generation from SQLite (about a millisecond), unless the database file's
    size and modification time are what they were less than `RECHECK_SECONDS` ago (a `stat`).
    """

    RECHECK_SECONDS = 1.0

    def __init__(self, path: Path, read: Callable[[], Signature] | None = None) -> None:
        self.path = path
        self._read = read or functools.partial(signature, path)
        """How the generation is read (`ChromaBackend.generation`: under the access lock)."""
        self._seen: Signature = None
        self._opened = False
        self._last: tuple[tuple[int, int, int], float, Signature] | None = None

    def _current(self) -> Signature:
        try:
            st = (self.path / SQLITE_NAME).stat()
            key = (st.st_ino, st.st_size, st.st_mtime_ns)
        except OSError:
            return None
        now = time.monotonic()
        if (
            self._last is not None
            and self._last[0] == key
            and now - self._last[1] < self.RECHECK_SECONDS
        ):
            return self._last[2]
        current = self._read()
        self._last = (key, now, current)
        return current

    def seen(self) -> None:
        """The client now reflects the store as it is on disk."""
        self._last = None
        self._seen, self._opened = self._current(), True

    def changed(self) -> bool:
        """True when something wrote the store since `seen` (never true before a first open)."""
        return self._opened and self._current() != self._seen


class Gate:
    """Many calls share the client at once; a refresh waits for them and runs alone."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._users = 0
        self._local = threading.local()

    def outermost(self) -> bool:
        """True unless this thread is already inside a call (nested calls never refresh)."""
        return not getattr(self._local, "depth", 0)

    @contextmanager
    def shared(self) -> Iterator[None]:
        depth = getattr(self._local, "depth", 0)
        if depth == 0:
            with self._cond:
                self._users += 1
        self._local.depth = depth + 1
        try:
            yield
        finally:
            self._local.depth = depth
            if depth == 0:
                with self._cond:
                    self._users -= 1
                    self._cond.notify_all()

    @contextmanager
    def exclusive(self) -> Iterator[Any]:
        """Held with no call in progress; calls wait until it is released."""
        with self._cond:
            self._cond.wait_for(lambda: self._users == 0)
            yield


_P = ParamSpec("_P")
_R = TypeVar("_R")


def reads(method: Callable[Concatenate[Any, _P], _R]) -> Callable[Concatenate[Any, _P], _R]:
    """A `DocumentStore` method that reads: it sees what other processes wrote since."""

    @functools.wraps(method)
    def call(self: Any, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        with self._backend.using():
            return method(self, *args, **kwargs)

    return call


def writes(method: Callable[Concatenate[Any, _P], _R]) -> Callable[Concatenate[Any, _P], _R]:
    """A `DocumentStore` method that writes: it holds the store's writer lock meanwhile."""

    @functools.wraps(method)
    def call(self: Any, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        with self._backend.writing():
            return method(self, *args, **kwargs)

    return call
