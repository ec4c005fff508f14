"""Search cursors: the ranking a search's first page fixed, kept where every process reads it.

A search that has more to show ranks every matching chunk once (`paging.rank_all`) and keeps
that ranking as a snapshot: the query, the filters, the store's version and the ranked
`(id, distance)` pairs. Its continuation is a cursor, `<snapshot>.<rank>`, that later pages
read from instead of asking Chroma again, so a walk can neither repeat nor skip a chunk: not
when Chroma's approximate (HNSW) search answers differently for a longer list, not where
scores tie, not when another process ingests between pages (the page then says so).

Where snapshots live (`shelf_for`):
- an embedded store: files in the store's folder (`ragbudget-cursors/`), which every process
  that opens the store reaches; a store this process may only read keeps them in a folder of
  the system's temporary directory named after the store;
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
from dataclasses import dataclass
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
    """Every chunk matching a search, ranked once: what its cursor pages read from."""

    query: str
    where: dict[str, Any] | None
    version: str
    ids: list[str]
    distances: list[float]
    created: float

    def encode(self) -> bytes:
        packed = array("f", self.distances).tobytes()
        body = {
            "query": self.query,
            "where": self.where,
            "version": self.version,
            "created": self.created,
            "ids": self.ids,
            "distances": base64.b64encode(packed).decode("ascii"),
        }
        return gzip.compress(json.dumps(body, separators=(",", ":")).encode(), compresslevel=1)

    @classmethod
    def decode(cls, blob: bytes) -> Ranking:
        body = json.loads(gzip.decompress(blob))
        distances = array("f")
        distances.frombytes(base64.b64decode(body["distances"]))
        return cls(
            query=body["query"], where=body["where"], version=body["version"],
            ids=list(body["ids"]), distances=list(distances), created=float(body["created"]),
        )  # fmt: skip


class Shelf(Protocol):
    """Where a store's snapshots are kept, by key."""

    def put(self, key: str, blob: bytes) -> None: ...
    def get(self, key: str) -> bytes | None: ...


def new_key(query: str, where: dict[str, Any] | None, version: str, ids: list[str]) -> str:
    """The key of a ranking: the same search on the same store gets the same key (and the same
    ranking), so its answers are the same text."""
    digest = hashlib.sha256(json.dumps([query, where, version], sort_keys=True).encode())
    digest.update("\0".join(ids).encode())
    return digest.hexdigest()[:12]


def save(shelf: Shelf, key: str, ranking: Ranking) -> None:
    shelf.put(key, ranking.encode())


def load(shelf: Shelf, cursor: Cursor, *, query: str, where: dict[str, Any] | None) -> Ranking:
    """The ranking `cursor` reads from, or a StoreError saying why it cannot and what to do."""
    blob = shelf.get(cursor.key)
    ranking = Ranking.decode(blob) if blob is not None else None
    if ranking is None or time.time() - ranking.created > LIFETIME:
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
    if cursor.rank > len(ranking.ids):
        msg = f"cursor {cursor} is past the end: its search ranked {len(ranking.ids)} chunks"
        raise StoreError(msg)
    return ranking


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

    def get(self, key: str) -> bytes | None:
        try:
            return (self.folder / f"{key}.json.gz").read_bytes()
        except FileNotFoundError:
            return None

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
        side.add(
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
    folder = path / FOLDER
    if not os.access(path, os.W_OK | os.X_OK) or (
        folder.exists() and not os.access(folder, os.W_OK | os.X_OK)
    ):
        digest = hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:16]
        folder = Path(tempfile.gettempdir()) / f"ragbudget-cursors-{os.getuid()}-{digest}"
    return FolderShelf(folder / backend.name)
