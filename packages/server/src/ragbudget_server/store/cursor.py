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
- an embedded store: files in a folder of the system's temporary directory named after the
  store's path and the user (`ragbudget-cursors-<uid>-<hash>`), which every process of that user
  that opens the store reaches, a server restarted included; never in the store's own folder,
  so that a search (a read) leaves the store as it was, and a read-only store pages too;
- a Chroma server: a side collection, `<collection>-ragbudget-cursors`, one record a snapshot
  (every client of the server reaches it, and it lives as long as the collection's data).

A snapshot lasts `LIFETIME` seconds from the first page; a store keeps at most `MAX_KEPT` of
them (the oldest go first). A cursor past either is an error that says what to do.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import logging
import os
import re
import tempfile
import time
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
        body = json.loads(gzip.decompress(blob))
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


class Shelf(Protocol):
    """Where a store's snapshots are kept, by key."""

    def put(self, key: str, blob: bytes) -> None: ...
    def put_new(self, key: str, blob: bytes) -> bool:
        """Keep `blob` under `key` unless a snapshot is kept there already (then False)."""
        ...

    def get(self, key: str) -> bytes | None: ...
    def kept_keys(self) -> list[str]: ...


def new_key(query: str, where: dict[str, Any] | None, version: str) -> str:
    """The key of a search's snapshot: the same search on the same store version reads the
    same snapshot, so its pages (by cursor or by offset) read one ranking; and stores holding
    the same chunks (one version) print the same cursor."""
    digest = hashlib.sha256(json.dumps([query, where, version], sort_keys=True).encode())
    return digest.hexdigest()[:12]


def save(shelf: Shelf, key: str, ranking: Ranking) -> None:
    shelf.put(key, ranking.encode())


def find(shelf: Shelf, key: str) -> Ranking | None:
    """The live snapshot kept under `key`, if any."""
    blob = shelf.get(key)
    ranking = Ranking.decode(blob) if blob is not None else None
    if ranking is None or time.time() - ranking.created > LIFETIME:
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
        msg = (
            f"cursor {cursor} continues another search (query {ranking.query!r}, filters "
            f"{ranking.where}): pass that query and those filters, or search without a cursor"
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
        except (OSError, ValueError, KeyError):
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

    def get(self, key: str) -> bytes | None:
        got = self._collection().get(ids=[key], include=["documents"])
        documents = got.get("documents") or []
        if not got["ids"] or not documents or not documents[0]:
            return None
        return base64.b64decode(documents[0])


def shelf_for(backend: Any) -> Shelf:
    """Where `backend`'s store keeps its snapshots (see the module docstring)."""
    if backend.server is not None:
        return ServerShelf(backend._client, backend.name)
    path: Path = backend.path
    digest = hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:16]
    folder = Path(tempfile.gettempdir()) / f"{FOLDER}-{os.getuid()}-{digest}"
    return FolderShelf(folder / backend.name)
