"""What the collection holds for files, by source: for the files an ingest reads, and for the
files it no longer finds (gone).

Every stored file has a first chunk (writes add it first and delete it last), so the first
chunks name the sources the collection holds; an ingest that knows them from its stat table
(`ragbudget_server.store.filestat`) reads only the gone files' chunks.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from ragbudget_server.store.records import Metadata

if TYPE_CHECKING:
    from ragbudget_server.store.backend import ChromaBackend

__all__ = ["HELD_BLOCK", "gone_by_query", "held_in_blocks", "held_records", "last_first", "under"]

HELD_BLOCK = 64
"""Sources asked for in one query."""


def last_first(existing: Mapping[str, Metadata]) -> list[str]:
    """Ids to delete, a file's first chunk last: a file with chunks left has its first."""
    return sorted(existing, key=lambda i: (existing[i].get("chunk_index") == 0, i))


def held_records(backend: ChromaBackend, sources: list[str]) -> dict[str, dict[str, Metadata]]:
    """What the collection holds for each of `sources`: id -> metadata."""
    held: dict[str, dict[str, Metadata]] = {}
    if not sources:
        return held
    for id_, meta in backend.metadatas({"source": {"$in": sources}}):
        held.setdefault(str(meta.get("source")), {})[id_] = meta
    return held


def under(prefixes: list[str]) -> Callable[[str], bool]:
    """Whether a source is one of `prefixes` or under one of them."""
    exact = frozenset(prefixes)
    folders = tuple(p.rstrip("/") + "/" for p in prefixes)
    return lambda source: source in exact or source.startswith(folders)


def held_in_blocks(backend: ChromaBackend, sources: list[str]) -> dict[str, dict[str, Metadata]]:
    """`held_records` of `sources`, 64 at a time."""
    held: dict[str, dict[str, Metadata]] = {}
    for start in range(0, len(sources), HELD_BLOCK):
        held.update(held_records(backend, sources[start : start + HELD_BLOCK]))
    return held


def gone_by_query(
    backend: ChromaBackend, roots: list[Path], kept: set[str]
) -> tuple[dict[str, list[str]], set[str]]:
    """The chunk ids of each document under `roots` whose file was not found this time, its
    first chunk last; and every source the collection holds.

    Every stored file has a first chunk (writes add it first and delete it last), so the
    first chunks name the sources; when the collection holds more chunks than those say (an
    interrupted write left a file half-changed), every record is read instead."""
    below = under([r.as_posix() for r in roots])
    counts: dict[str, int] = {}
    for _, meta in backend.metadatas({"chunk_index": 0}):
        source, count = str(meta.get("source", "")), meta.get("chunk_count")
        counts[source] = counts.get(source, 0) + (count if isinstance(count, int) else -1)
    held: dict[str, dict[str, Metadata]] = {}
    if sum(counts.values()) == backend.require().count():
        sources = set(counts)
        held = held_in_blocks(backend, [s for s in counts if below(s) and s not in kept])
    else:
        sources = set()
        for id_, meta in backend.metadatas():
            source = str(meta.get("source", ""))
            sources.add(source)
            if below(source) and source not in kept:
                held.setdefault(source, {})[id_] = meta
    return {source: last_first(records) for source, records in held.items()}, sources
