"""Ingest: turning files into Chroma records, and writing them so that a crash can never corrupt.

`ingest_files` walks the files under the roots given, stats each one, reads and plans each
changed file's records (`ragbudget_server.store.records`) against what the collection holds for
it, and writes the plans in file order, in batches (`DocumentStore.ingest` checks its arguments
and calls it). With many files to read, the reading, chunking, counting and embedding of the
next files goes on in a helper process while this one writes (`ragbudget_server.store.planner`);
what is written, and in which order, is the same.

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

import logging
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragbudget.text import shown

from ragbudget_server.store.convert import CONVERTER_VERSION, kind_of
from ragbudget_server.store.errors import StoreError
from ragbudget_server.store.files import Candidate, read_file, walk
from ragbudget_server.store.filestat import FileStats, stat_key
from ragbudget_server.store.held import (
    HELD_BLOCK,
    gone_by_query,
    held_in_blocks,
    held_records,
    last_first,
    under,
)
from ragbudget_server.store.models import FileProblem, IngestReport
from ragbudget_server.store.paths import user_path
from ragbudget_server.store.planner import Planner
from ragbudget_server.store.records import (
    Metadata,
    Planned,
    PlanSetup,
    PlanTask,
    Record,
    complete_hash,
    file_hash,
    is_complete,
    plan_records,
    prepare,
)

if TYPE_CHECKING:
    from ragbudget_server.store.backend import ChromaBackend

__all__ = [
    "RECIPE_VERSION",
    "Changes",
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

Progress = Callable[[int, int, str], None]
"""`on_progress(done_files, total_files, path)`, called after each file with the path of the
file read next (the last file's own at the end), so a label names the file being read."""
Refuse = Callable[[Path], str | None]
"""Why a file found must be left out (None: it may be indexed)."""


@dataclass
class FilePlan:
    """What to write for one file, given what the collection holds for it now."""

    source: str
    add: list[Record] = field(default_factory=list)
    update: list[Record] = field(default_factory=list)
    delete: list[str] = field(default_factory=list)


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
            plan.update.append(replace(record, metadata={**record.metadata, **gone}, vector=None))
    plan.delete = [i for i in last_first(existing) if i not in wanted]
    return plan


Embed = Callable[[list[str]], Sequence[Any]]


@dataclass
class Changes:
    """The chunk ids an ingest added and deleted (for each id, whether its last write left it
    in the collection), and whether the ingest ran to its end: what the lexical index applies
    when it was in step before (`hybrid.after_ingest`)."""

    present: dict[str, bool] = field(default_factory=dict)
    complete: bool = False

    def note(self, ids: Sequence[str], *, present: bool) -> None:
        for id_ in ids:
            self.present[id_] = present


class Writer:
    """Buffers file plans and writes them in batches, each file add-first, delete-last."""

    def __init__(
        self, collection: Any, embed: Embed, batch_size: int, changes: Changes | None = None
    ) -> None:
        self._collection = collection
        self._changes = changes
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
                embeddings=self._embeddings(batch),
            )
            self.added += len(batch)
            if self._changes is not None:
                self._changes.note([r.id for r in batch], present=True)
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
            if self._changes is not None:
                self._changes.note(deletes[i : i + self._batch], present=False)
        for call in done:
            call()

    def _embeddings(self, batch: list[Record]) -> Sequence[Any]:
        """The batch's embeddings: those the planning helper computed, the rest computed now."""
        missing = [r.embed_text for r in batch if r.vector is None]
        if len(missing) == len(batch):
            return self._embed(missing)
        made = iter(self._embed(missing) if missing else [])
        return [r.vector if r.vector is not None else next(made) for r in batch]


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
    changes: Changes | None = None,
) -> IngestReport:
    """Chunk and store the text and code files under `roots` (`DocumentStore.ingest`, whose
    arguments are checked): each file stat'ed first, each changed one read and planned against
    what the collection holds for it (in the planning helper when there are many,
    `ragbudget_server.store.planner`), the plans written in file order in batches; with
    `prune`, the chunks of files under `roots` no longer found go (without it, `sources_stale`
    counts them). `changes`, when given, notes the chunk ids written, and is marked complete at
    the end."""
    exclude = backend.path.resolve() if backend.path is not None else None
    candidates = list(walk(roots, exclude=exclude))
    collection = backend.open(create=True)
    backend.record_counter()
    recipe = f"{RECIPE_VERSION}:{chunk_tokens}:{overlap}:{backend.counter.name}"
    converted_recipe = f"{recipe}:{CONVERTER_VERSION}"  # a document's reader's version counts
    stats = FileStats(backend.path, backend.name, str(collection.id))
    stats.trust(backend.generation(records=True))
    report = IngestReport(files_seen=len(candidates))
    writer = Writer(collection, backend.embed, batch_size, changes)
    kept: set[str] = set()
    limits = f"{max_file_bytes}:{max_document_bytes}"
    jobs = _jobs(candidates, stats, refuse, recipe, converted_recipe, limits)
    held = _HeldAhead(backend, [job.source if job and not job.known else None for job in jobs])
    setup = PlanSetup(chunk_tokens, overlap, max_file_bytes, max_document_bytes)
    counter = backend.counter
    from ragbudget_server.store.embedding import HashingEmbedding  # Chroma: loaded by now

    hashing = type(backend.ef) is HashingEmbedding

    def task(k: int) -> PlanTask | None:
        job = jobs[held.files[k]]
        if job is None or job.reason is not None:
            return None
        return PlanTask(job.path, job.recipe, complete_hash(held.existing(k)))

    # The hashing embedding is computed with the chunks, here as in the helper (and often while
    # this process waits for the helper); any other is left to the writer, a batch at a time.
    embed = backend.embed if hashing else None

    def local(task: PlanTask) -> Planned:
        return prepare(task, setup, counter, embed, read_file)  # read_file: this module's

    size = sum(
        j.size for j in jobs if j is not None and j.reason is None and j.size <= max_file_bytes
    )
    planner = Planner(
        len(held.files), size, task, local, setup=setup, counter_spec=backend.counter_spec,
        counter_name=counter.name, embed_dim=backend.ef.dim if hashing else None,
    )  # fmt: skip
    total = len(candidates)
    with planner:
        k = 0
        for i, (candidate, job) in enumerate(zip(candidates, jobs, strict=True), start=1):
            source = candidate.path.as_posix()
            if job is None:  # stat first: a file seen as it was stored is not read
                kept.add(source)
                report.files_unchanged += 1
            elif job.known and job.reason is not None:  # left out as it was last time
                report.files_skipped.append(FileProblem(path=source, reason=job.reason))
            else:
                _apply(job, planner.get(k), held.existing(k), writer, stats, report, kept)
                held.done(k)
                k += 1
            if on_progress is not None:
                following = candidates[i].path.as_posix() if i < total else source
                on_progress(i, total, following)
        writer.flush()
    report.chunks_added, report.chunks_deleted = writer.added, writer.deleted
    left_out = {p.path: p.reason for p in report.files_skipped}
    left_out.update({p.path: f"unreadable: {p.reason}" for p in report.errors})
    backend.record_skipped(roots, left_out)
    below = under([r.as_posix() for r in roots])
    seen = {c.path.as_posix() for c in candidates}
    stats.forget_left_out(lambda source: source in seen or not below(source))
    if stats.sources is not None:  # the table knows the sources: only the missing are read
        missing = [s for s in sorted(stats.sources) if below(s) and s not in kept]
        gone = {s: last_first(r) for s, r in held_in_blocks(backend, missing).items()}
    else:
        gone, sources = gone_by_query(backend, roots, kept)
        stats.known(sources)
    if prune:
        report.sources_pruned, pruned_chunks = _prune(backend, gone, changes)
        report.chunks_deleted += pruned_chunks
        for source in gone:
            stats.forget(source)
            stats.dropped(source)
    else:
        report.sources_stale = len(gone)
    stats.save(backend.generation(records=True))
    if changes is not None:
        changes.complete = True
    logger.info(
        "ingested %d files (%d unchanged, %d skipped): %d chunks added, %d deleted",
        report.files_ingested, report.files_unchanged, len(report.files_skipped),
        report.chunks_added, report.chunks_deleted,
    )  # fmt: skip
    return report


@dataclass(frozen=True)
class _Job:
    """A file whose stat is not the one stored: why it is left out unread, if it is, its stat
    key, and its chunking recipe."""

    path: Path
    source: str
    reason: str | None
    key: tuple[str, bool] | None
    recipe: str
    size: int
    limits: str
    known: bool = False
    """Left out unread: it was left out when read last time, with this stat, and holds no
    chunks (the table knows the collection's sources)."""

    @property
    def left_out_key(self) -> tuple[str, bool] | None:
        """The stat key a reason to leave it out is kept under (the size caps count)."""
        return None if self.key is None else (f"{self.key[0]}|{self.limits}", self.key[1])


def _jobs(
    candidates: list[Candidate],
    stats: FileStats,
    refuse: Refuse | None,
    recipe: str,
    converted_recipe: str,
    limits: str,
) -> list[_Job | None]:
    """Each candidate's job, None for a file unchanged by its stat (it is not read)."""
    stored = stats.sources
    jobs: list[_Job | None] = []
    for candidate in candidates:
        source = candidate.path.as_posix()
        reason = candidate.skip
        if reason is None and refuse is not None:
            reason = refuse(candidate.path)
        own = converted_recipe if kind_of(candidate.path) is not None else recipe
        key = stat_key(candidate.path, own) if candidate.skip is None else None
        if reason is None and stats.unchanged(source, key):
            jobs.append(None)
        else:
            size = int(key[0].split(":", 1)[0]) if key is not None else 0  # stat_key's size
            job = _Job(candidate.path, source, reason, key, own, size, limits)
            if reason is None and stored is not None and source not in stored:
                reason = stats.left_out(source, job.left_out_key)
                job = replace(job, reason=reason, known=reason is not None)
            jobs.append(job)
    return jobs


class _HeldAhead:
    """What the collection holds for each file to read, fetched 64 files at a time as the
    planning reaches them (the ingest's files k, in order; `done(k)` lets it go)."""

    def __init__(self, backend: ChromaBackend, sources: list[str | None]) -> None:
        self._backend = backend
        self.files = [i for i, s in enumerate(sources) if s is not None]
        self._sources = [s for s in sources if s is not None]
        self._blocks: dict[int, dict[str, dict[str, Metadata]]] = {}

    def existing(self, k: int) -> dict[str, Metadata]:
        block = k // HELD_BLOCK
        if block not in self._blocks:
            start = block * HELD_BLOCK
            self._blocks[block] = held_records(
                self._backend, self._sources[start : start + HELD_BLOCK]
            )
        return self._blocks[block].get(self._sources[k], {})

    def done(self, k: int) -> None:
        if (k + 1) % HELD_BLOCK == 0:
            self._blocks.pop(k // HELD_BLOCK, None)


def _apply(
    job: _Job,
    planned: Planned | None,
    existing: dict[str, Metadata],
    writer: Writer,
    stats: FileStats,
    report: IngestReport,
    kept: set[str],
) -> None:
    """Report one file read (or left out unread) and queue what to write for it."""
    source = job.source
    stats.forget(source)  # recorded again once what it holds now is written
    reason = job.reason
    if planned is not None and planned.error is not None:
        report.errors.append(FileProblem(path=source, reason=planned.error))
        kept.add(source)  # unreadable now is not gone: never pruned
        return
    if reason is None and planned is not None:
        reason = planned.skipped
    if reason is not None:
        report.files_skipped.append(FileProblem(path=source, reason=reason))
        if existing:  # indexed before, unindexable now: its old text must go
            writer.push(FilePlan(source, delete=last_first(existing)))
            stats.dropped(source)
            removed = f"{reason}; its {len(existing)} stored chunks were removed"
            report.files_removed.append(FileProblem(path=source, reason=removed))
        if job.reason is None:  # found when read (empty, binary...): kept with its stat
            key, why = job.left_out_key, reason
            writer.push(FilePlan(source), lambda: stats.record_left_out(source, key, why))
        return
    if planned is None or planned.fhash is None:
        return
    kept.add(source)
    if planned.unchanged:
        report.files_unchanged += 1
        stats.record(source, job.key)
        return
    plan = plan_file(source, planned.records, existing)
    key = job.key
    stats.stored(source)
    writer.push(plan, lambda: stats.record(source, key))
    report.files_ingested += 1


def _prune(
    backend: ChromaBackend, gone: dict[str, list[str]], changes: Changes | None
) -> tuple[int, int]:
    """Delete the chunks of the documents `gone` names (each file's first chunk last)."""
    ids = [i for group in gone.values() for i in group]
    for i in range(0, len(ids), 1000):
        backend.require().delete(ids=ids[i : i + 1000])
        if changes is not None:
            changes.note(ids[i : i + 1000], present=False)
    return len(gone), len(ids)
