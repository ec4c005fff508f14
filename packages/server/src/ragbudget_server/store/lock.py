"""The locks of an embedded store, files the kernel releases if their holder dies.

One writer at a time: two processes writing one embedded Chroma store at once would each
persist the vector index as their own client holds it, and the last one to write would drop
the other's vectors. So an ingest holds an exclusive `flock` on `ragbudget.lock` in the store
folder for as long as it writes; a second ingest waits for it (saying so) instead of racing it.
`flock` locks belong to the open file: when the process exits or is killed, the kernel releases
them, so a crashed ingest never leaves the store locked. The file records the holder's pid for
the waiting message.

No Chroma call while another process writes (`StoreAccess`): Chroma's embedded engine reads and
writes the vector index files (`header.bin`, `data_level0.bin`, ...) outside SQLite's locking,
and a read while another process rewrites them crashed the reader in native code (issue 52: a
server answering searches died with SIGSEGV in `Collection.get` while another process ingested
a copy of the same files). So every Chroma call on an embedded store holds `ragbudget.access.lock`:
shared for reads, exclusive for each write call (one batch of an ingest, not the whole ingest:
searches go on between batches). Within a process, calls on the store take turns (Chroma's
embedded calls hold the GIL for most of their time, so little is lost), which keeps the lock one
`flock` and one `flock` release per call, a few microseconds.
"""

from __future__ import annotations

import functools
import logging
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ragbudget_server.store.errors import StoreError

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no flock, writers are not serialized
    fcntl = None  # type: ignore[assignment]

__all__ = ["ACCESS_NAME", "LOCK_NAME", "Locked", "StoreAccess", "release_lock_file", "writer_lock"]

logger = logging.getLogger(__name__)

LOCK_NAME = "ragbudget.lock"
ACCESS_NAME = "ragbudget.access.lock"
WRITES = frozenset(
    {"add", "update", "upsert", "delete", "modify", "create_collection", "delete_collection",
     "get_or_create_collection", "reset"}
)  # fmt: skip
"""The Chroma methods (of a client or a collection) that write the store's files."""


def _holder(handle: int) -> str:
    try:
        os.lseek(handle, 0, os.SEEK_SET)
        pid = os.read(handle, 32).decode("ascii", "replace").strip()
    except OSError:
        return ""
    return f" (pid {pid})" if pid.isdigit() else ""


@contextmanager
def writer_lock(folder: Path) -> Iterator[None]:
    """Hold the store's writer lock, waiting for another writer to finish if need be."""
    if fcntl is None:  # pragma: no cover - Windows
        yield
        return
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / LOCK_NAME
    try:
        handle = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        msg = f"cannot write the store at {folder}: {exc.strerror or exc}"
        raise StoreError(msg) from None
    try:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            message = (
                f"another ingest{_holder(handle)} is writing the store at {folder}: "
                "waiting for it to finish"
            )
            logger.warning("%s", message)
            fcntl.flock(handle, fcntl.LOCK_EX)
        os.ftruncate(handle, 0)
        os.pwrite(handle, f"{os.getpid()}\n".encode("ascii"), 0)
        yield
    finally:
        os.close(handle)  # releases the lock


def release_lock_file(folder: Path, *, remove_folder: bool) -> None:
    """Remove the lock file of a write that wrote nothing (and the folder it made, if empty)."""
    try:
        (folder / LOCK_NAME).unlink(missing_ok=True)
        (folder / ACCESS_NAME).unlink(missing_ok=True)
        if remove_folder:
            folder.rmdir()
    except OSError:
        pass


class StoreAccess:
    """The access lock of the embedded store in `folder`: many processes read, or one writes.

    `hold()` is held around each Chroma call; a thread's calls nested in one it holds pass
    through. A process that may not create the lock file (a read-only folder, whose store it
    reads from a private copy) reads without it.
    """

    def __init__(self, folder: Path) -> None:
        self.path = folder / ACCESS_NAME
        self._turn = threading.RLock()  # a process's calls on the store take turns
        self._handle: int | None = None
        self._depth = 0

    def _open(self, *, create: bool) -> int | None:
        """The lock file's descriptor, opened again if the file was removed or replaced."""
        handle = self._handle
        if handle is not None:
            try:
                if os.fstat(handle).st_ino == os.stat(self.path).st_ino:
                    return handle
            except OSError:
                pass
            os.close(handle)
            self._handle = None
        if not create and not self.path.parent.is_dir():
            return None  # no store yet: nothing to read, and reading creates nothing
        try:
            self._handle = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError:
            try:
                self._handle = os.open(self.path, os.O_RDONLY)
            except OSError as exc:
                logger.debug("no access lock for %s: %s", self.path.parent, exc)
                return None
        return self._handle

    @contextmanager
    def hold(self, *, exclusive: bool) -> Iterator[None]:
        """Held around one Chroma call: shared, or `exclusive` for a write."""
        with self._turn:
            if fcntl is None or self._depth:  # nested in a call of this thread (or Windows)
                yield
                return
            handle = self._open(create=exclusive)
            if handle is not None:
                fcntl.flock(handle, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
            self._depth = 1
            try:
                yield
            finally:
                self._depth = 0
                if handle is not None:
                    fcntl.flock(handle, fcntl.LOCK_UN)

    def close(self) -> None:
        with self._turn:
            handle, self._handle = self._handle, None
            if handle is not None:
                os.close(handle)


class Locked:
    """A Chroma client or collection whose every call holds the store's access lock (the
    writing ones exclusively); its attributes read through, and collections a client returns
    come locked too."""

    __slots__ = ("_access", "_target")

    def __init__(self, target: Any, access: StoreAccess) -> None:
        self._target, self._access = target, access

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._target, name)
        if name.startswith("_") or not callable(value):
            return value
        access, exclusive = self._access, name in WRITES

        @functools.wraps(value)
        def call(*args: Any, **kwargs: Any) -> Any:
            with access.hold(exclusive=exclusive):
                found = value(*args, **kwargs)
            if type(found).__name__ == "Collection":
                return Locked(found, access)
            return found

        return call

    def __repr__(self) -> str:
        return f"Locked({self._target!r})"
