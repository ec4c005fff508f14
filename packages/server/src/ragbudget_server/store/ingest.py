"""Ingest: turning files into Chroma records, and writing them so that a crash can never corrupt.

`ingest_files` walks the files under the roots given, plans each file's records against what
the collection holds for it, and writes the plans in batches (`DocumentStore.ingest` checks
its arguments and calls it).

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
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, Any

from ragbudget._shown import shown
from ragbudget.counters import TokenCounter

from ragbudget_server.store.convert import CONVERTER_VERSION, kind_of
from ragbudget_server.store.errors import StoreError
from ragbudget_server.store.files import read_file, walk
from ragbudget_server.store.filestat import FileStats, stat_key
from ragbudget_server.store.models import FileProblem, IngestReport
from ragbudget_server.store.pages import chunk_pages, page_starts
from ragbudget_server.store.paths import user_path

if TYPE_CHECKING:
    from ragbudget_server.store.backend import ChromaBackend

__all__ = [
    "RECIPE_VERSION",
    "FilePlan",
    "Progress",
    "Record",
    "Refuse",
    "Writer",
    "check_roots",
    "file_hash",
    "ingest_files",
    "is_complete",
    "plan_file",
    "plan_records",
]

logger = logging.getLogger(__name__)

RECIPE_VERSION = "2"
"""Bumped when chunking or metadata change, so files get re-chunked on the next ingest."""

Metadata = dict[str, Any]

Progress = Callable[[int, int, str], None]
"""`on_progress(done_files, total_files, path)`, called after each file with the path of the
file read next (the last file's own at the end), so a label names the file being read."""
Refuse = Callable[[Path], str | None]
"""Why a file found must be left out (None: it may be indexed)."""


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
    unit: str | None = None,
) -> list[Record]:
    """Chunk `text` and build its records, with what `read` needs to rebuild the text exactly.

    `lead` holds any text between the end of what earlier chunks covered and a chunk's start
    (whitespace a splitter trimmed), and `tail` on the last chunk whatever follows it. `unit`
    ("page", "slide") is what the text's marker lines count: each chunk then carries its pages
    (`ragbudget_server.store.pages`).
    """
    from ragbudget.chunking import chunk_text

    path = PurePath(source)
    chunks = chunk_text(
        text, max_tokens=chunk_tokens, overlap=overlap, counter=counter, path=source
    )
    chunks = [c for c in chunks if text[c.start_index : c.end_index].strip()]
    dirs = [p.as_posix() for p in reversed(path.parents)]
    header = f"{path.parent.name} {path.stem}\n"  # lets a path's words count in the embedding
    starts = page_starts(text, unit) if unit else []
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
        if unit:
            meta["page_unit"] = unit
            meta.update(chunk_pages(starts, chunk.start_line, chunk.end_line))
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
    plan.delete = [i for i in _last_first(existing) if i not in wanted]
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
        self._done: list[Callable[[], None]] = []
        self.added = 0
        self.deleted = 0

    def push(self, plan: FilePlan, done: Callable[[], None] | None = None) -> None:
        """Buffer `plan`; `done()` is called once it is written."""
        self._pending.append(plan)
        self._pending_adds += len(plan.add)
        if done is not None:
            self._done.append(done)
        if self._pending_adds >= self._batch:
            self.flush()

    def flush(self) -> None:
        """Write what is buffered: all adds, then metadata rewrites, then deletions."""
        plans, self._pending, self._pending_adds = self._pending, [], 0
        done, self._done = self._done, []
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
        for call in done:
            call()


# -- the walk: files in, a report out ------------------------------------------------------------


def check_roots(paths: Any) -> list[Path]:
    """The files and folders `paths` names (one path or a sequence), each existing."""
    if isinstance(paths, str | os.PathLike):
        paths = [paths]
    if not isinstance(paths, Sequence) or not paths:
        msg = f"paths must name at least one file or folder, got {shown(paths)}"
        raise StoreError(msg)
    roots = []
    for p in paths:
        if not isinstance(p, str | os.PathLike) or not os.fspath(p):
            msg = f"paths must be file or folder paths, got {shown(p)}"
            raise StoreError(msg)
        root = user_path("paths", os.fspath(p))
        if not root.exists():
            msg = f"path does not exist: {shown(os.fspath(p))}"
            raise StoreError(msg)
        roots.append(root)
    return roots


def ingest_files(
    backend: ChromaBackend,
    roots: list[Path],
    *,
    chunk_tokens: int,
    overlap: int,
    prune: bool,
    on_progress: Progress | None,
    max_file_bytes: int,
    batch_size: int,
    refuse: Refuse | None,
    max_document_bytes: int,
) -> IngestReport:
    """Chunk and store the text and code files under `roots` (`DocumentStore.ingest`, whose
    arguments are checked): a file at a time, its plan against what the collection holds,
    written in batches; with `prune`, the chunks of files under `roots` no longer found go
    (without it, `sources_stale` counts them)."""
    exclude = backend.path.resolve() if backend.path is not None else None
    candidates = list(walk(roots, exclude=exclude))
    collection = backend.open(create=True)
    backend.record_counter()
    recipe = f"{RECIPE_VERSION}:{chunk_tokens}:{overlap}:{backend.counter.name}"
    converted_recipe = f"{recipe}:{CONVERTER_VERSION}"  # a document's reader's version counts
    stats = FileStats(backend.path, backend.name, str(collection.id))
    report = IngestReport(files_seen=len(candidates))
    writer = Writer(collection, backend.embed, batch_size)
    kept: set[str] = set()
    total = len(candidates)
    for start in range(0, total, 64):
        group = candidates[start : start + 64]
        keys: dict[str, tuple[str, bool] | None] = {}
        for candidate in group:  # stat first: a file seen as it was stored is not read
            if candidate.skip is None:
                source = candidate.path.as_posix()
                own = converted_recipe if kind_of(candidate.path) is not None else recipe
                keys[source] = stat_key(candidate.path, own)
        unchanged = {s for s, key in keys.items() if stats.unchanged(s, key)}
        held = _held(
            backend, [c.path.as_posix() for c in group if c.path.as_posix() not in unchanged]
        )
        for i, candidate in enumerate(group, start=start + 1):
            source = candidate.path.as_posix()
            reason = candidate.skip
            if reason is None and refuse is not None:
                reason = refuse(candidate.path)
            if reason is None and source in unchanged:
                kept.add(source)
                report.files_unchanged += 1
            else:
                _ingest_one(
                    candidate.path, reason, held.get(source, {}), keys.get(source), writer,
                    stats, report, kept, chunk_tokens=chunk_tokens, overlap=overlap,
                    counter=backend.counter, recipe=recipe, converted_recipe=converted_recipe,
                    max_file_bytes=max_file_bytes, max_document_bytes=max_document_bytes,
                )  # fmt: skip
            if on_progress is not None:
                following = candidates[i].path.as_posix() if i < total else source
                on_progress(i, total, following)
    writer.flush()
    report.chunks_added, report.chunks_deleted = writer.added, writer.deleted
    left_out = {p.path: p.reason for p in report.files_skipped}
    left_out.update({p.path: f"unreadable: {p.reason}" for p in report.errors})
    backend.record_skipped(roots, left_out)
    gone = _gone(backend, roots, kept)
    if prune:
        report.sources_pruned, pruned_chunks = _prune(backend, gone)
        report.chunks_deleted += pruned_chunks
        for source in gone:
            stats.forget(source)
    else:
        report.sources_stale = len(gone)
    stats.save()
    logger.info(
        "ingested %d files (%d unchanged, %d skipped): %d chunks added, %d deleted",
        report.files_ingested, report.files_unchanged, len(report.files_skipped),
        report.chunks_added, report.chunks_deleted,
    )  # fmt: skip
    return report


def _ingest_one(
    path: Path,
    reason: str | None,
    existing: dict[str, Metadata],
    key: tuple[str, bool] | None,
    writer: Writer,
    stats: FileStats,
    report: IngestReport,
    kept: set[str],
    *,
    chunk_tokens: int,
    overlap: int,
    counter: TokenCounter,
    recipe: str,
    converted_recipe: str,
    max_file_bytes: int,
    max_document_bytes: int,
) -> None:
    """Read one file whose stat is not the one stored, and plan what to write for it."""
    source = path.as_posix()
    stats.forget(source)  # recorded again once what it holds now is written
    try:
        text, data, reason = (
            (None, None, reason)
            if reason is not None
            else read_file(path, max_file_bytes, max_document_bytes)
        )
    except OSError as exc:
        report.errors.append(FileProblem(path=source, reason=str(exc)))
        kept.add(source)  # unreadable now is not gone: never pruned
        return
    if reason is not None:
        report.files_skipped.append(FileProblem(path=source, reason=reason))
        if existing:  # indexed before, unindexable now: its old text must go
            writer.push(FilePlan(source, delete=_last_first(existing)))
            removed = f"{reason}; its {len(existing)} stored chunks were removed"
            report.files_removed.append(FileProblem(path=source, reason=removed))
        return
    if text is None or data is None:
        return
    kept.add(source)
    fhash = file_hash(data, converted_recipe if kind_of(path) is not None else recipe)
    if is_complete(existing, fhash):
        report.files_unchanged += 1
        stats.record(source, key)
        return
    records = plan_records(
        source, text.text, fhash, chunk_tokens=chunk_tokens, overlap=overlap, counter=counter,
        unit=text.unit,
    )  # fmt: skip
    plan = plan_file(source, records, existing)
    writer.push(plan, lambda: stats.record(source, key))
    report.files_ingested += 1


def _last_first(existing: Mapping[str, Metadata]) -> list[str]:
    """Ids to delete, a file's first chunk last: a file with chunks left has its first."""
    return sorted(existing, key=lambda i: (existing[i].get("chunk_index") == 0, i))


def _held(backend: ChromaBackend, sources: list[str]) -> dict[str, dict[str, Metadata]]:
    """What the collection holds for each of `sources`: id -> metadata."""
    held: dict[str, dict[str, Metadata]] = {}
    if not sources:
        return held
    for id_, meta in backend.metadatas({"source": {"$in": sources}}):
        held.setdefault(str(meta.get("source")), {})[id_] = meta
    return held


def _under(source: str, prefixes: list[str]) -> bool:
    return any(source == p or source.startswith(p.rstrip("/") + "/") for p in prefixes)


def _gone(backend: ChromaBackend, roots: list[Path], kept: set[str]) -> dict[str, list[str]]:
    """The chunk ids of each document under `roots` whose file was not found this time, its
    first chunk last.

    Every stored file has a first chunk (writes add it first and delete it last), so the
    first chunks name the sources; when the collection holds more chunks than those say (an
    interrupted write left a file half-changed), every record is read instead."""
    prefixes = [r.as_posix() for r in roots]
    counts: dict[str, int] = {}
    for _, meta in backend.metadatas({"chunk_index": 0}):
        source, count = str(meta.get("source", "")), meta.get("chunk_count")
        counts[source] = counts.get(source, 0) + (count if isinstance(count, int) else -1)
    held: dict[str, dict[str, Metadata]] = {}
    if sum(counts.values()) == backend.require().count():
        missing = [s for s in counts if _under(s, prefixes) and s not in kept]
        for start in range(0, len(missing), 64):
            held.update(_held(backend, missing[start : start + 64]))
    else:
        for id_, meta in backend.metadatas():
            source = str(meta.get("source", ""))
            if _under(source, prefixes) and source not in kept:
                held.setdefault(source, {})[id_] = meta
    return {source: _last_first(records) for source, records in held.items()}


def _prune(backend: ChromaBackend, gone: dict[str, list[str]]) -> tuple[int, int]:
    """Delete the chunks of the documents `gone` names (each file's first chunk last)."""
    ids = [i for group in gone.values() for i in group]
    for i in range(0, len(ids), 1000):
        backend.require().delete(ids=ids[i : i + 1000])
    return len(gone), len(ids)
