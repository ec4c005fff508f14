"""One writer at a time on an embedded store: a lock file the kernel releases if the writer dies.

Two processes writing one embedded Chroma store at once would each persist the vector index as
their own client holds it, and the last one to write would drop the other's vectors. So an
ingest holds an exclusive `flock` on `ragbudget.lock` in the store folder for as long as it
writes; a second ingest waits for it (saying so) instead of racing it. `flock` locks belong to
the open file: when the process exits or is killed, the kernel releases them, so a crashed
ingest never leaves the store locked. The file records the holder's pid for the waiting message.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ragbudget_server.store.errors import StoreError

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no flock, writers are not serialized
    fcntl = None  # type: ignore[assignment]

__all__ = ["LOCK_NAME", "release_lock_file", "writer_lock"]

logger = logging.getLogger(__name__)

LOCK_NAME = "ragbudget.lock"


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
        if remove_folder:
            folder.rmdir()
    except OSError:
        pass
