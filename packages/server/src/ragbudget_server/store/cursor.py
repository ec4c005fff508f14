"""Search cursors: the ranking a search's first page fixed, kept where every process reads it.

A search keeps its ranking as a snapshot: the query, the filters, the store's version, how
many chunks matched, and the ranked `(id, distance)` pairs shown so far. The first page ranks
only what it can show (Chroma's top `offset + limit`, as a plain query would), so it costs
what a plain query costs; a later page that reads past the snapshot's ranked ids extends it
with the next candidates (`paging.extend`), never an id the snapshot holds, and when Chroma's
approximate (HNSW) search stops returning new ids, with every remaining matching chunk ranked
exactly, once. Its continuation is a cursor, `<snapshot>.<rank>`, that later pages read from,
so a walk can neither repeat nor skip a chunk: not when Chroma's approximate search answers
differently for a longer list, not where scores tie, not when another process ingests between
pages (the page then says so). An ingest first records, in each live snapshot it would change,
which chunks matched (`freeze`): a walk past the ranked ids then covers exactly those (the
ones the ingest deleted are accounted as gone), never a chunk added since.

A snapshot's key names the query, the filters and the store's version, so the same search on
the same store reads the same snapshot (its `offset` pages included): offsets are exact while
the store does not change and the snapshot lives. The version names the chunks the store holds
(`backend.content_version`), so stores holding the same chunks give the same search the same
key, and the same answer: a cursor's text is part of the answer its budget holds (issue 51).
An extension grows a snapshot by steps that depend only on its length, so two processes
extending one snapshot write the same ids.

Where snapshots live (`shelf_for`):
- an embedded store: files in the user's private folder of the system's temporary directory,
  `ragbudget-cursors-<uid>/` (made with mode 0700; used only when it is a real folder, owned
  by the user and closed to others, else a fresh private one for the process), one subfolder a
  store (named after its path), which every process of that user that opens the store
  reaches, a server restarted included; never in the store's own folder, so that a search (a
  read) leaves the store as it was, and a read-only store pages too. Subfolders whose
  snapshots have all expired are removed;
- a Chroma server: a side collection, `<collection>-ragbudget-cursors`, one record a snapshot
  (every client of the server reaches it, and it lives as long as the collection's data).

A snapshot lasts `LIFETIME` seconds from the first page; a store keeps at most `MAX_KEPT` of
them (the oldest go first). A cursor past either is an error that says what to do. A damaged
snapshot (empty, truncated, not ours, or one that would inflate past `MAX_SNAPSHOT_BYTES`) is
discarded: the search ranks afresh, and a cursor into it is an expired one.
"""

from __future__ import annotations

import base64
import contextlib
import gzip
import hashlib
import json
import logging
import os
import re
import shutil
import stat
import tempfile
import time
import zlib
from array import array
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

from ragbudget_server.store.errors import StoreError

__all__ = [
    "LIFETIME",
    "MAX_KEPT",
    "Cursor",
    "FolderShelf",
    "Ranking",
    "ServerShelf",
    "Shelf",
    "freeze",
    "load",
    "new_key",
    "save",
]

logger = logging.getLogger(__name__)

LIFETIME = 3600
"""Seconds a cursor stays valid after the first page of its search."""
MAX_KEPT = 100
"""Most snapshots a store keeps; minting one more forgets the oldest."""
FOLDER = "ragbudget-cursors"
MAX_SNAPSHOT_BYTES = 64 * 1024 * 1024
"""Most bytes a snapshot may inflate to (a ranking of a million ids is about 20 MB)."""
_CURSOR = re.compile(r"^([0-9a-f]{12})\.(\d{1,9})$")
_KEY_FILE = re.compile(r"^[0-9a-f]{12}\.json\.gz$")


@dataclass(frozen=True)
class Cursor:
    """Where a walk stands: a snapshot's key and the rank (0-based) its next page starts at."""

    key: str
    rank: int

    @classmethod
    def parse(cls, text: Any) -> Cursor:
        match = _CURSOR.match(text) if isinstance(text, str) else None
        if match is None:
            msg = (
                f"cursor must be a search response's next_cursor, such as '3f9a1c2b7d4e.40', "
                f"got {text!r}"
            )
            raise StoreError(msg)
        return cls(match[1], int(match[2]))

    def __str__(self) -> str:
        return f"{self.key}.{self.rank}"


@dataclass(frozen=True)
class Ranking:
    """A search's ranking as far as its pages have read: what its cursor pages read from."""

    query: str
    where: dict[str, Any] | None
    version: str
    ids: list[str]
    distances: list[float]
    created: float
    total: int = 0
    """How many chunks matched at the first page."""
    complete: bool = False
    """True once every matching chunk is ranked (`ids` is the whole ranking)."""
    members: list[str] | None = None
    """The ids that matched, recorded by an ingest before it changed the store (`freeze`)."""

    @property
    def end(self) -> int:
        """The ranking's length: known once complete, else the count at the first page."""
        return len(self.ids) if self.complete else max(self.total, len(self.ids))

    def encode(self) -> bytes:
        packed = array("f", self.distances).tobytes()
        body = {
            "query": self.query,
            "where": self.where,
            "version": self.version,
            "created": self.created,
            "ids": self.ids,
            "distances": base64.b64encode(packed).decode("ascii"),
            "total": self.total,
            "complete": self.complete,
            "members": self.members,
        }
        return gzip.compress(json.dumps(body, separators=(",", ":")).encode(), compresslevel=1)

    @classmethod
    def decode(cls, blob: bytes) -> Ranking:
        body = json.loads(_inflate(blob))
        distances = array("f")
        distances.frombytes(base64.b64decode(body["distances"]))
        members = body.get("members")
        return cls(
            query=body["query"], where=body["where"], version=body["version"],
            ids=list(body["ids"]), distances=list(distances), created=float(body["created"]),
            total=int(body.get("total", len(body["ids"]))),
            complete=bool(body.get("complete", True)),
            members=None if members is None else list(members),
        )  # fmt: skip


def _inflate(blob: bytes) -> bytes:
    """`blob` gunzipped, at most `MAX_SNAPSHOT_BYTES` of it (a ValueError past that, or for a
    blob that is not one whole gzip stream)."""
    inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
    out = inflater.decompress(blob, MAX_SNAPSHOT_BYTES + 1)
    if len(out) > MAX_SNAPSHOT_BYTES or not inflater.eof:
        msg = "not a whole snapshot (truncated, or inflating past the cap)"
        raise ValueError(msg)
    return out


class Shelf(Protocol):
    """Where a store's snapshots are kept, by key."""

    def put(self, key: str, blob: bytes) -> None: ...
    def put_new(self, key: str, blob: bytes) -> bool:
        """Keep `blob` under `key` unless a snapshot is kept there already (then False)."""
        ...

    def get(self, key: str) -> bytes | None: ...
    def kept_keys(self) -> list[str]: ...
    def discard(self, key: str) -> None:
        """Forget the snapshot kept under `key` (a damaged one)."""
        ...


def new_key(query: str, where: dict[str, Any] | None, version: str) -> str:
    """The key of a search's snapshot: the same search on the same store version reads the
    same snapshot, so its pages (by cursor or by offset) read one ranking; and stores holding
    the same chunks (one version) print the same cursor."""
    digest = hashlib.sha256(json.dumps([query, where, version], sort_keys=True).encode())
    return digest.hexdigest()[:12]


def save(shelf: Shelf, key: str, ranking: Ranking) -> None:
    shelf.put(key, ranking.encode())


def find(shelf: Shelf, key: str) -> Ranking | None:
    """The live snapshot kept under `key`, if any; a damaged one is discarded (None)."""
    blob = shelf.get(key)
    if blob is None:
        return None
    try:
        ranking = Ranking.decode(blob)
    except (ValueError, KeyError, TypeError, EOFError, OSError, zlib.error) as exc:
        logger.warning("discarding a damaged search snapshot (%s): %s", key, exc)
        shelf.discard(key)
        return None
    if time.time() - ranking.created > LIFETIME:
        return None
    return ranking


def load(shelf: Shelf, cursor: Cursor, *, query: str, where: dict[str, Any] | None) -> Ranking:
    """The ranking `cursor` reads from, or a StoreError saying why it cannot and what to do."""
    ranking = find(shelf, cursor.key)
    if ranking is None:
        msg = (
            f"cursor {cursor} has expired (a cursor lasts {LIFETIME // 60} minutes, and a store "
            f"keeps its {MAX_KEPT} newest): search again without a cursor to rank afresh"
        )
        raise StoreError(msg)
    if ranking.query != query or ranking.where != where:
        msg = (  # nothing of that other search (its query, its folders) is told
            f"cursor {cursor} continues another search (another query or other filters): "
            "pass the query and filters of its first page, or search without a cursor"
        )
        raise StoreError(msg)
    if cursor.rank > ranking.end:
        msg = f"cursor {cursor} is past the end: its search ranked {ranking.end} chunks"
        raise StoreError(msg)
    return ranking


def freeze(
    shelf: Shelf, version: str, matching: Callable[[dict[str, Any] | None], list[str]]
) -> int:
    """Before an ingest changes the store (at `version`): record in each live snapshot of that
    version that is not complete the ids that match its filters (`matching(where)`), so its
    walk covers exactly the chunks of its first page's store. Returns how many it recorded."""
    frozen = 0
    for key in shelf.kept_keys():
        try:
            ranking = find(shelf, key)
        except OSError:
            continue
        if ranking is None or ranking.complete or ranking.members is not None:
            continue
        if ranking.version != version:
            continue
        shelf.put(key, replace(ranking, members=matching(ranking.where)).encode())
        frozen += 1
    return frozen


class FolderShelf:
    """Snapshots as files in a folder (an embedded store's own, or a temporary one)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def put(self, key: str, blob: bytes) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        target = self.folder / f"{key}.json.gz"
        fd, tmp = tempfile.mkstemp(dir=self.folder, prefix=".tmp-")
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(blob)
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        self._forget_old()

    def put_new(self, key: str, blob: bytes) -> bool:
        if (self.folder / f"{key}.json.gz").exists():
            return False
        self.put(key, blob)  # two first pages at once write the same ranking
        return True

    def get(self, key: str) -> bytes | None:
        try:
            return (self.folder / f"{key}.json.gz").read_bytes()
        except FileNotFoundError:
            return None

    def discard(self, key: str) -> None:
        (self.folder / f"{key}.json.gz").unlink(missing_ok=True)

    def kept_keys(self) -> list[str]:
        try:
            names = os.listdir(self.folder)
        except OSError:
            return []
        return sorted(n[: -len(".json.gz")] for n in names if _KEY_FILE.match(n))

    def _forget_old(self) -> None:
        """Remove expired snapshots, and the oldest beyond `MAX_KEPT`."""
        now = time.time()
        try:
            entries = sorted(
                (e.stat().st_mtime, e.path)
                for e in os.scandir(self.folder)
                if e.name.endswith(".json.gz") or e.name.startswith(".tmp-")
            )
        except OSError:
            return
        keep = MAX_KEPT
        for mtime, path in reversed(entries):
            if Path(path).name.startswith(".tmp-"):
                if now - mtime > 60:  # a write that died midway
                    Path(path).unlink(missing_ok=True)
            elif now - mtime > LIFETIME + 60 or keep <= 0:
                Path(path).unlink(missing_ok=True)
            else:
                keep -= 1


class ServerShelf:
    """Snapshots as records of a side collection on the Chroma server: every process that
    reaches the server reaches them. A record's document is the snapshot (gzip, base64)."""

    def __init__(self, client: Any, collection: str) -> None:
        name = f"{collection}-ragbudget-cursors"
        if len(name) > 500:  # Chroma's names stop at 512 characters
            name = f"{collection[:400]}-{hashlib.sha256(collection.encode()).hexdigest()[:12]}-c"
        self.client, self.name = client, name
        self._side: Any = None

    def _collection(self) -> Any:
        if self._side is None:
            self._side = self.client.get_or_create_collection(
                self.name, embedding_function=None, metadata={"ragbudget": "search cursors"}
            )
        return self._side

    def put(self, key: str, blob: bytes) -> None:
        side = self._collection()
        now = time.time()
        side.upsert(
            ids=[key], embeddings=[[1.0]], documents=[base64.b64encode(blob).decode("ascii")],
            metadatas=[{"created": now}],
        )  # fmt: skip
        old = side.get(where={"created": {"$lt": now - LIFETIME - 60}}, include=[])["ids"]
        if side.count() > MAX_KEPT:
            kept = side.get(include=["metadatas"])
            ranked = sorted(
                zip(kept["ids"], kept["metadatas"] or [], strict=True),
                key=lambda pair: float((pair[1] or {}).get("created", 0.0)),
            )
            old += [i for i, _ in ranked[: len(ranked) - MAX_KEPT]]
        if old:
            side.delete(ids=sorted(set(old)))

    def put_new(self, key: str, blob: bytes) -> bool:
        if self._collection().get(ids=[key], include=[])["ids"]:
            return False
        self.put(key, blob)
        return True

    def kept_keys(self) -> list[str]:
        return sorted(self._collection().get(include=[])["ids"])

    def discard(self, key: str) -> None:
        self._collection().delete(ids=[key])

    def get(self, key: str) -> bytes | None:
        got = self._collection().get(ids=[key], include=["documents"])
        documents = got.get("documents") or []
        if not got["ids"] or not documents or not documents[0]:
            return None
        try:
            return base64.b64decode(documents[0])
        except ValueError:
            return b""  # damaged: `find` discards it


def shelf_for(backend: Any) -> Shelf:
    """Where `backend`'s store keeps its snapshots (see the module docstring)."""
    if backend.server is not None:
        return ServerShelf(backend._client, backend.name)
    path: Path = backend.path
    digest = hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:16]
    base = private_folder()
    if base not in _swept:  # once a process
        _swept.add(base)
        _sweep(base, keep=digest)
    return FolderShelf(base / digest / backend.name)


_own: Path | None = None
_swept: set[Path] = set()


def private_folder() -> Path:
    """The user's folder for snapshots: `<tmp>/ragbudget-cursors-<uid>`, made with mode 0700
    and used only when it is a real folder (not a link), the user's own and closed to others;
    else (another user made it, or a link stands there) a fresh private folder for this
    process, with a warning. Nothing of another user's making is ever written to or removed."""
    uid = os.getuid() if hasattr(os, "getuid") else 0
    folder = Path(tempfile.gettempdir()) / f"{FOLDER}-{uid}"
    try:
        os.mkdir(folder, 0o700)
    except FileExistsError:
        pass
    except OSError as exc:
        logger.warning("cannot make the cursor folder %s (%s): using a private one", folder, exc)
        return _fallback()
    info = os.lstat(folder)
    mine = not hasattr(os, "getuid") or info.st_uid == uid
    if stat.S_ISDIR(info.st_mode) and mine and not info.st_mode & 0o077:
        return folder
    logger.warning(
        "the cursor folder %s is not this user's private folder (a link, another owner, or "
        "open to others): using a private one for this process; remove it to share cursors "
        "between processes again", folder,
    )  # fmt: skip
    return _fallback()


def _fallback() -> Path:
    global _own
    if _own is None:
        _own = Path(tempfile.mkdtemp(prefix=f"{FOLDER}-"))
    return _own


def _sweep(base: Path, keep: str) -> None:
    """Remove the stores' subfolders of `base` whose snapshots have all expired (the folders
    of stores no longer searched), but `keep`'s."""
    now = time.time()
    try:
        entries = list(os.scandir(base))
    except OSError:
        return
    for entry in entries:
        if entry.name == keep or not entry.is_dir(follow_symlinks=False):
            continue
        newest = 0.0
        for root, _dirs, files in os.walk(entry.path):
            for name in files:
                with contextlib.suppress(OSError):
                    newest = max(newest, os.lstat(os.path.join(root, name)).st_mtime)
        if now - newest > LIFETIME + 60:
            shutil.rmtree(entry.path, ignore_errors=True)
