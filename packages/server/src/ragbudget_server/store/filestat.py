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

Two more things save reads and queries that would grow with the store:
- the files left out when read (empty, binary, ...), each with its stat key and the size caps it
  was read under: one unchanged since is left out again unread, one changed is read again;
- every source the collection holds (those with an entry, and `others`: stored, but without a
  stat to trust) with the store's generation (`live.records_signature`) once this ingest's
  writes are done. An ingest that finds the store at that generation knows its sources without
  asking Chroma (finding gone files then reads only theirs); a store written since by anything
  else (another process, a crash after a write and before the table was saved) has another
  generation, and the ingest asks Chroma, as it does for a table without a generation.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ragbudget_server.store.live import Signature

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
        self._skipped: dict[str, list[str]] = {}
        self._others: set[str] = set()
        self._generation: Any = None
        self._sources: set[str] | None = None
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
            skipped, others = held.get("skipped"), held.get("others")
            if isinstance(skipped, dict):
                self._skipped = {
                    str(k): [str(v[0]), str(v[1])]
                    for k, v in skipped.items()
                    if isinstance(v, list) and len(v) == 2
                }
            if isinstance(others, list):
                self._generation = held.get("generation")
                self._others = {str(o) for o in others}

    def trust(self, generation: Signature) -> None:
        """Know the collection's sources from the table when the store is at the generation the
        table was saved at (`generation`: the store's now, read under the writer lock)."""
        if generation is not None and self._generation == json.loads(json.dumps(generation)):
            self._sources = set(self._keys) | self._others

    @property
    def sources(self) -> set[str] | None:
        """The collection's sources, if known (`trust`, `known`), with this ingest's writes."""
        return self._sources

    def known(self, sources: set[str]) -> None:
        """The collection's sources, as a query of the whole collection found them now; an
        entry for a source it does not hold goes (its file is read again next time)."""
        self._sources = set(sources)
        for source in [s for s in self._keys if s not in sources]:
            self.forget(source)

    def stored(self, source: str) -> None:
        """`source` has chunks in the collection now."""
        if self._sources is not None:
            self._sources.add(source)

    def dropped(self, source: str) -> None:
        """`source` has no chunks in the collection any more."""
        if self._sources is not None:
            self._sources.discard(source)

    def left_out(self, source: str, key: tuple[str, bool] | None) -> str | None:
        """Why `source` was left out when last read, if its stat key is still `key`."""
        held = self._skipped.get(source)
        if key is None or key[1] or held is None or held[0] != key[0]:
            return None
        return held[1]

    def record_left_out(self, source: str, key: tuple[str, bool] | None, reason: str) -> None:
        """Note that `source`, read with this stat key, was left out for `reason`."""
        if key is None or key[1] or self._path is None:
            return
        if self._skipped.get(source) != [key[0], reason]:
            self._skipped[source] = [key[0], reason]
            self._dirty = True

    def forget_left_out(self, keep: Callable[[str], bool]) -> None:
        """Drop the left-out entries `keep` says no (their files are gone)."""
        for source in [s for s in self._skipped if not keep(s)]:
            del self._skipped[source]
            self._dirty = True

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
        if self._skipped.pop(source, None) is not None:
            self._dirty = True

    def save(self, generation: Signature) -> None:
        """Write the table if it changed: a new file, then renamed over the old one. With the
        collection's sources known, `generation` is the store's now, after this ingest's writes
        (None: unknown, and the next ingest asks Chroma for the sources)."""
        if self._path is None:
            return
        if self._sources is not None and generation is not None:
            others = self._sources.difference(self._keys)
            saved = json.loads(json.dumps(generation))
            if others != self._others or saved != self._generation:
                self._others, self._generation, self._dirty = others, saved, True
        elif self._generation is not None:
            self._generation, self._dirty = None, True
        if not self._dirty:
            return
        body: dict[str, Any] = {
            "version": _VERSION, "collection": self._id, "files": self._keys,
            "skipped": self._skipped,
        }  # fmt: skip
        if self._generation is not None:
            body["generation"], body["others"] = self._generation, sorted(self._others)
        temporary = self._path.with_name(f"{self._path.name}.{os.getpid()}.tmp")
        try:
            temporary.write_text(json.dumps(body, ensure_ascii=False), encoding="utf-8")
            os.replace(temporary, self._path)
        except OSError as exc:  # the table only saves time: a store works without it
            logger.warning("cannot write %s: %s", self._path, exc)
            temporary.unlink(missing_ok=True)
            return
        self._dirty = False
