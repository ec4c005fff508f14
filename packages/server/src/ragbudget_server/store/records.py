"""A file's records: reading it, hashing it, and chunking it into what Chroma stores.

`prepare` is the part of an ingest that needs no collection: read one file, hash its bytes with
the chunking recipe, and, unless the records held for it are already complete for that hash,
chunk and count it into `Record`s (embedded too, when given an embedding). It runs in the
ingest's own process or in its planning helper (`ragbudget_server.store.planner`); either way
the records are the same, and the ingest (`ragbudget_server.store.ingest`) writes them.

Each chunk's id hashes its source, its position and its text, so the same file chunked the same
way gives the same ids. Every chunk of a file carries the file's `file_hash` (its bytes plus the
chunking recipe) and `chunk_count`; a file is stored completely exactly when its records are
`chunk_count` chunks that all carry the current `file_hash`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePath
from typing import Any

from ragbudget.counters import TokenCounter

from ragbudget_server.store.files import read_file
from ragbudget_server.store.pages import chunk_pages, page_starts

__all__ = [
    "Metadata",
    "PlanSetup",
    "PlanTask",
    "Planned",
    "Record",
    "complete_hash",
    "file_hash",
    "is_complete",
    "plan_records",
    "prepare",
]

Metadata = dict[str, Any]
Read = Callable[[Path, int, int], Any]
"""`files.read_file`'s shape: (path, max_bytes, max_document_bytes) -> (text, bytes, reason)."""


@dataclass(frozen=True)
class Record:
    """One chunk as Chroma stores it, plus the text its embedding is computed from."""

    id: str
    document: str
    metadata: Metadata
    embed_text: str
    vector: Any = None
    """Its embedding when the planning helper computed it (`planner`), else None: the writer
    embeds `embed_text` then."""


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


def complete_hash(existing: Mapping[str, Metadata]) -> str | None:
    """The one `fhash` for which `is_complete(existing, fhash)`, or None when there is none: a
    file whose bytes hash to it needs no chunking."""
    first = next(iter(existing.values()), None)
    fhash = first.get("file_hash") if first is not None else None
    return fhash if isinstance(fhash, str) and is_complete(existing, fhash) else None


@dataclass(frozen=True)
class PlanSetup:
    """What every file of one ingest is planned with (picklable: the helper gets it once)."""

    chunk_tokens: int
    overlap: int
    max_file_bytes: int
    max_document_bytes: int


@dataclass(frozen=True)
class PlanTask:
    """One file to read and plan: its path, its chunking recipe (`file_hash`'s), and the hash
    its held records are complete for (`complete_hash`), if any."""

    path: Path
    recipe: str
    complete: str | None


@dataclass
class Planned:
    """What reading a file gave: an error (it could not be read), a reason it is left out, its
    hash with `unchanged` (its held records are complete), or its hash and records."""

    error: str | None = None
    skipped: str | None = None
    fhash: str | None = None
    unchanged: bool = False
    records: list[Record] = field(default_factory=list)


def prepare(
    task: PlanTask,
    setup: PlanSetup,
    counter: TokenCounter,
    embed: Callable[[list[str]], Sequence[Any]] | None = None,
    read: Read = read_file,
) -> Planned:
    """Read, hash and (when its held records are not complete) chunk one file; with `embed`,
    each record carries its embedding. Raises what chunking or embedding raises; an unreadable
    file is an outcome (`error`), as it is a line of the report."""
    try:
        text, data, reason = read(task.path, setup.max_file_bytes, setup.max_document_bytes)
    except OSError as exc:
        return Planned(error=str(exc))
    if reason is not None:
        return Planned(skipped=reason)
    if text is None or data is None:
        return Planned()
    fhash = file_hash(data, task.recipe)
    if fhash == task.complete:
        return Planned(fhash=fhash, unchanged=True)
    records = plan_records(
        task.path.as_posix(), text.text, fhash, chunk_tokens=setup.chunk_tokens,
        overlap=setup.overlap, counter=counter, unit=text.unit,
    )  # fmt: skip
    if embed is not None and records:
        vectors = embed([r.embed_text for r in records])
        records = [replace(r, vector=v) for r, v in zip(records, vectors, strict=True)]
    return Planned(fhash=fhash, records=records)
