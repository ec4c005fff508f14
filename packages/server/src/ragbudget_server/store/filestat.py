"""What earlier ingests saw of each file, so an unchanged file is known by a `stat` alone.

An embedded store keeps, beside its database, `ragbudget-files-<collection>.json`: for each
file stored complete, its size, mtime, inode and the chunking recipe, as they were when it was
read. An ingest stats each file first: a file whose stat matches is unchanged and is neither
read nor hashed, so re-ingesting an unchanged tree costs a walk and a stat per file, and a
one-file change reads that one file. A file whose stat changed is read and hashed as before
(`ingest.is_complete`), and its entry is written again once its chunks are.

The table can only ever be behind the collection, never ahead: an entry is recorded after
the file's chunks are written (or found complete), the table is replaced atomically, and a
file whose stat differs from its entry is checked against the collection itself. Killed at
any point, the next ingest at worst reads files it could have skipped. Like git's index, a
file modified within `RACY_NS` of the stat that read it is never recorded: a second change in
the same timestamp tick, with the same size, would otherwise go unseen. The table belongs to
one collection (its id is in the file): a collection made anew ignores an old table.
"""

from __future__ import annotations

import json
import logging
import os
import time
from pathlib import Path

__all__ = ["RACY_NS", "FileStats", "stat_key"]

logger = logging.getLogger(__name__)

RACY_NS = 2_000_000_000
"""A file modified less than this before it was stat'ed is not recorded (2 s: coarse
filesystems keep mtimes to the second or two)."""
_VERSION = 1


def stat_key(path: Path, recipe: str) -> tuple[str, bool] | None:
    """The file's stat as a key (size, mtime, inode, recipe), and whether it is racy (modified
    too recently to be trusted later); None when it cannot be stat'ed (the read says why)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    racy = time.time_ns() - st.st_mtime_ns < RACY_NS
    return f"{st.st_size}:{st.st_mtime_ns}:{st.st_ino}:{recipe}", racy


class FileStats:
    """The table of one embedded collection (no folder: a store on a server keeps none, and
    every file is read and hashed)."""

    def __init__(self, folder: Path | None, collection: str, collection_id: str) -> None:
        self._path = folder / f"ragbudget-files-{collection}.json" if folder else None
        self._id = collection_id
        self._keys: dict[str, str] = {}
        self._dirty = False
        if self._path is None:
            return
        try:
            held = json.loads(self._path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return
        except (OSError, ValueError) as exc:
            logger.debug("ignoring %s: %s", self._path, exc)
            return
        files = held.get("files") if isinstance(held, dict) else None
        ours = isinstance(held, dict) and held.get("version") == _VERSION
        ours = ours and held.get("collection") == self._id
        if ours and isinstance(files, dict):
            self._keys = {str(k): str(v) for k, v in files.items()}

    def unchanged(self, source: str, key: tuple[str, bool] | None) -> bool:
        """True when `source` was stored complete with this very stat."""
        return key is not None and not key[1] and self._keys.get(source) == key[0]

    def record(self, source: str, key: tuple[str, bool] | None) -> None:
        """Note that `source`'s chunks, as read with this stat, are all written."""
        if key is None or key[1] or self._path is None:
            self.forget(source)
        elif self._keys.get(source) != key[0]:
            self._keys[source] = key[0]
            self._dirty = True

    def forget(self, source: str) -> None:
        """`source` is gone, left out, or its chunks are about to change."""
        if self._keys.pop(source, None) is not None:
            self._dirty = True

    def save(self) -> None:
        """Write the table if it changed: a new file, then renamed over the old one."""
        if self._path is None or not self._dirty:
            return
        body = {"version": _VERSION, "collection": self._id, "files": self._keys}
        temporary = self._path.with_name(f"{self._path.name}.{os.getpid()}.tmp")
        try:
            temporary.write_text(json.dumps(body, ensure_ascii=False), encoding="utf-8")
            os.replace(temporary, self._path)
        except OSError as exc:  # the table only saves time: a store works without it
            logger.warning("cannot write %s: %s", self._path, exc)
            temporary.unlink(missing_ok=True)
            return
        self._dirty = False
