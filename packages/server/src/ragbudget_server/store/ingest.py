"""Turning files into Chroma records, and writing them so that a crash can never corrupt.

Each chunk's id hashes its source, its position and its text, so the same file chunked the same
way gives the same ids: ingesting again writes nothing. Every chunk of a file carries the file's
`file_hash` (its bytes plus the chunking recipe) and `chunk_count`; a file is stored completely
exactly when its records are `chunk_count` chunks that all carry the current `file_hash`.

Writing a changed file goes add-new, then update-kept, then delete-stale. Killed at any point, the
next run finds the file incomplete (a record with another hash, or too few records), plans it
again from the file, adds what is missing, rewrites what differs and deletes what is stale: the
end state is the same as an uninterrupted run's, with nothing lost and nothing doubled.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Any

from ragbudget.counters import TokenCounter

__all__ = [
    "RECIPE_VERSION",
    "FilePlan",
    "Record",
    "Writer",
    "file_hash",
    "is_complete",
    "plan_file",
    "plan_records",
]

logger = logging.getLogger(__name__)

RECIPE_VERSION = "1"
"""Bumped when chunking or metadata change, so files get re-chunked on the next ingest."""

Metadata = dict[str, Any]


@dataclass(frozen=True)
class Record:
    """One chunk as Chroma stores it, plus the text its embedding is computed from."""

    id: str
    document: str
    metadata: Metadata
    embed_text: str


@dataclass
class FilePlan:
    """What to write for one file, given what the collection holds for it now."""

    source: str
    add: list[Record] = field(default_factory=list)
    update: list[Record] = field(default_factory=list)
    delete: list[str] = field(default_factory=list)


def file_hash(data: bytes, recipe: str) -> str:
    """The hash a complete file's chunks all carry: its bytes and how it was chunked."""
    digest = hashlib.sha256(recipe.encode("utf-8") + b"\0")
    digest.update(data)
    return digest.hexdigest()[:32]


def is_complete(existing: Mapping[str, Metadata], fhash: str) -> bool:
    """True when the records held for a file are exactly its chunks for `fhash`."""
    if not existing:
        return False
    indices = set()
    for meta in existing.values():
        if meta.get("file_hash") != fhash or meta.get("chunk_count") != len(existing):
            return False
        indices.add(meta.get("chunk_index"))
    return indices == set(range(len(existing)))


def _chunk_id(source: str, index: int, text: str) -> str:
    digest = hashlib.sha256(f"{source}\0{index}\0".encode())
    digest.update(text.encode("utf-8"))
    return digest.hexdigest()[:16]


def _file_type(path: PurePath) -> str:
    suffix = path.suffix.lower().lstrip(".")
    return suffix or "text"


def plan_records(
    source: str,
    text: str,
    fhash: str,
    *,
    chunk_tokens: int,
    overlap: int,
    counter: TokenCounter,
) -> list[Record]:
    """Chunk `text` and build its records, with what `read` needs to rebuild the text exactly.

    `lead` holds any text between the end of what earlier chunks covered and a chunk's start
    (whitespace a splitter trimmed), and `tail` on the last chunk whatever follows it.
    """
    from ragbudget.chunking import chunk_text

    path = PurePath(source)
    chunks = chunk_text(
        text, max_tokens=chunk_tokens, overlap=overlap, counter=counter, path=source
    )
    chunks = [c for c in chunks if text[c.start_index : c.end_index].strip()]
    dirs = [p.as_posix() for p in reversed(path.parents)]
    header = f"{path.parent.name} {path.stem}\n"  # lets a path's words count in the embedding
    records: list[Record] = []
    covered = 0
    for index, chunk in enumerate(chunks):
        start, end = chunk.start_index, chunk.end_index
        document = text[start:end]
        meta: Metadata = {
            "source": source,
            "dirs": dirs,
            "file_type": _file_type(path),
            "start_line": chunk.start_line,
            "end_line": chunk.end_line,
            "start_index": start,
            "end_index": end,
            "chunk_index": index,
            "chunk_count": len(chunks),
            "tokens": chunk.tokens,
            # the text as the JSON of a search response carries it (escaped): lets a search
            # size its response from stored counts before its one count of the whole
            "json_tokens": counter.count(json.dumps(document, ensure_ascii=False)[1:-1]),
            "counter": counter.name,
            "file_hash": fhash,
        }
        if start > covered:
            meta["lead"] = text[covered:start]
        covered = max(covered, end)
        if index == len(chunks) - 1 and covered < len(text):
            meta["tail"] = text[covered:]
        records.append(
            Record(_chunk_id(source, index, document), document, meta, header + document)
        )
    return records


def plan_file(source: str, records: list[Record], existing: Mapping[str, Metadata]) -> FilePlan:
    """Compare a file's records with what the collection holds for it."""
    plan = FilePlan(source)
    wanted = {r.id for r in records}
    for record in records:
        held = existing.get(record.id)
        if held is None:
            plan.add.append(record)
        elif dict(held) != record.metadata:
            # Chroma merges metadata on update: None removes a key the new record lacks.
            gone = {key: None for key in held if key not in record.metadata}
            plan.update.append(
                Record(record.id, record.document, {**record.metadata, **gone}, record.embed_text)
            )
    plan.delete = sorted(i for i in existing if i not in wanted)
    return plan


Embed = Callable[[list[str]], Sequence[Any]]


class Writer:
    """Buffers file plans and writes them in batches, each file add-first, delete-last."""

    def __init__(self, collection: Any, embed: Embed, batch_size: int) -> None:
        self._collection = collection
        self._embed = embed
        self._batch = max(1, batch_size)
        self._pending: list[FilePlan] = []
        self._pending_adds = 0
        self.added = 0
        self.deleted = 0

    def push(self, plan: FilePlan) -> None:
        self._pending.append(plan)
        self._pending_adds += len(plan.add)
        if self._pending_adds >= self._batch:
            self.flush()

    def flush(self) -> None:
        """Write what is buffered: all adds, then metadata rewrites, then deletions."""
        plans, self._pending, self._pending_adds = self._pending, [], 0
        adds = [r for p in plans for r in p.add]
        for i in range(0, len(adds), self._batch):
            batch = adds[i : i + self._batch]
            self._collection.add(
                ids=[r.id for r in batch],
                documents=[r.document for r in batch],
                metadatas=[r.metadata for r in batch],
                embeddings=self._embed([r.embed_text for r in batch]),
            )
            self.added += len(batch)
        updates = [r for p in plans for r in p.update]
        for i in range(0, len(updates), self._batch):
            batch = updates[i : i + self._batch]
            self._collection.update(
                ids=[r.id for r in batch], metadatas=[r.metadata for r in batch]
            )
        deletes = [i for p in plans for i in p.delete]
        for i in range(0, len(deletes), self._batch):
            self._collection.delete(ids=deletes[i : i + self._batch])
            self.deleted += len(deletes[i : i + self._batch])
