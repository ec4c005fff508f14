"""The lexical index beside the vectors: SQLite FTS5, BM25-ranked, kept in step by ingests.

Why FTS5: it ships inside Python's own `sqlite3` (no new dependency, no server), stores an
inverted index on disk that updates row by row (an ingest that changes one file writes that
file's chunks, nothing else), ranks with BM25, and has SQLite's transactions and file locks,
so several processes read while one writes and a killed writer leaves the last committed index.
An engine such as tantivy would add a compiled dependency for the same three things.

Tokens: FTS5's `unicode61` tokenizer (case and diacritics folded; `_` and punctuation split, so
`max_retries` is the phrase `max retries`) does not split Chinese, Japanese or Korean runs into
words. Before indexing, and in every query, text is NFKC-normalized and each CJK run becomes its
overlapping character bigrams (`東京都` -> `東京 京都`), as Lucene's CJK analyzer does: no
dictionary, and a question in those languages matches the files that share its bigrams.

Where it lives:
- an embedded store: `ragbudget-lexical-<collection>.sqlite3` in the store's folder, written only
  by ingests (under the store's writer lock), read read-only by searches (`mode=ro`, rollback
  journal: a reader creates no file), so a search leaves the store as it was;
- a Chroma server: a cache file under `$RAGBUDGET_CACHE/lexical/` (by default
  `$XDG_CACHE_HOME/ragbudget`, else `~/.cache/ragbudget`) named after the
  server, the collection and its id, brought in step by a search that finds it behind the
  server's store version (another client ingested).

In step: `sync` makes the index hold exactly the collection's chunk ids (it lists them, deletes
the extra ones, adds the missing ones with their documents) and records the store version it
matches; an ingest marks the index dirty before it writes and syncs it after, so an ingest
killed at any point leaves a dirty index that the next ingest repairs. An ingest that found the
index in step (clean, at the store's version) and ran to its end into an embedded store (whose
ingests take turns under its writer lock) brings it in step with `apply` instead: only the ids
it added and deleted, read from Chroma, and only if the index still records the version it was
in step with and ends with as many chunks as the collection; otherwise `sync`. A search confirms the
chunks the index proposes against Chroma (existence and filters) before ranking them.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import sqlite3
import threading
import unicodedata
from collections.abc import Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import quote

import numpy as np
from ragbudget.text import CJK_PIECE, CJK_RUN, bigrams

__all__ = ["LexicalIndex", "Proposal", "cjk_bigrams", "index_path", "match_query"]

logger = logging.getLogger(__name__)

SCHEMA = "2"
"""Bumped when the tokens change: an index of another schema is rebuilt by the next sync."""
_BATCH = 500
_readers = threading.local()
_KEPT = 4
"""Read connections kept per thread (one per index file, the most recently opened)."""
_TIES = 10
_MAX_TERMS = 64
_COMMON = 0.1
"""A query word in more than this share of the chunks is left out (BM25 gives it no weight)."""

_WORD = re.compile(r"[^\W_]+")


def cjk_bigrams(text: str) -> str:
    """`text` NFKC-normalized, each CJK run replaced by its bigrams between spaces."""
    text = unicodedata.normalize("NFKC", text)
    return CJK_RUN.sub(lambda m: " " + " ".join(bigrams(m[0])) + " ", text)


def _phrase(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'


def match_query(query: str) -> list[tuple[str, str | None]]:
    """The FTS5 terms of `query`: `(term, word)` with `word` the term's one token when it has
    exactly one (its frequency can be looked up), else None. A run of letters and digits with
    what joins it (`max_retries`, `os.path`) is one phrase; a CJK run gives its bigrams."""
    terms: dict[str, str | None] = {}
    for word in unicodedata.normalize("NFKC", query).split():
        for piece in CJK_PIECE.split(word):
            if not piece:
                continue
            if CJK_RUN.fullmatch(piece):
                for gram in bigrams(piece):
                    terms.setdefault(_phrase(gram), gram.lower())
            elif tokens := _WORD.findall(piece):
                terms.setdefault(_phrase(piece), tokens[0].lower() if len(tokens) == 1 else None)
    return list(terms.items())[:_MAX_TERMS]


def _cache_home() -> Path:
    """`RAGBUDGET_CACHE`, else `$XDG_CACHE_HOME/ragbudget`, else `~/.cache/ragbudget`."""
    if own := os.environ.get("RAGBUDGET_CACHE"):
        return Path(own)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "ragbudget"


def index_path(folder: Path | None, server: str | None, collection: str) -> Path:
    """Where a store's lexical index lives (see the module docstring)."""
    if folder is not None:
        return folder / f"ragbudget-lexical-{collection}.sqlite3"
    digest = hashlib.sha256(f"{server}\0{collection}".encode()).hexdigest()[:16]
    return _cache_home() / "lexical" / f"{digest}.sqlite3"


def _filters(where: dict[str, Any] | None) -> tuple[str, list[str]] | None:
    """SQL for the store's own filters (file type, folder), or None for another shape (then the
    index proposes unfiltered and Chroma's check filters)."""
    if where is None:
        return "", []
    clauses = where.get("$and", [where]) if len(where) == 1 else None
    sql, args = "", list[str]()
    for clause in clauses or []:
        if isinstance(clause.get("file_type"), str) and len(clause) == 1:
            sql, args = sql + " AND d.file_type = ?", [*args, clause["file_type"]]
        elif isinstance(folder := (clause.get("dirs") or {}).get("$contains"), str):
            prefix = folder.rstrip("/") + "/"
            escaped = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
            sql, args = sql + " AND d.source LIKE ? ESCAPE '\\'", [*args, escaped + "%"]
        else:
            return None
    return (sql, args) if clauses else None


def _header(source: str) -> str:
    """The words of a chunk's path that count with its text (as in its embedding)."""
    path = PurePosixPath(source)
    return f"{path.parent.name} {path.stem}\n"


@dataclass(frozen=True)
class Proposal:
    """What the index proposes for a query: ids, best first, with their vectors as stored."""

    ids: list[str]
    vectors: list[bytes]
    in_step: bool
    """The index matched the store's version when read, and applied the search's filters:
    its ids exist and pass them (else Chroma checks)."""


class LexicalIndex:
    """One store's FTS5 index: `search` reads it, `sync` (at ingest) writes it."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def exists(self) -> bool:
        return self.path.is_file()

    @contextmanager
    def _read(self) -> Iterator[sqlite3.Connection]:
        """A read-only connection, kept per thread while the file is the same one (a new
        connection reads the schema and FTS5's structure again: half a search's cost)."""
        st = os.stat(self.path)
        key, kept = str(self.path), getattr(_readers, "kept", None)
        if kept is None:
            kept = _readers.kept = {}
        held = kept.get(key)
        if held is None or held[0] != (st.st_dev, st.st_ino):
            if held is not None:
                kept.pop(key)[1].close()
            while len(kept) >= _KEPT:  # the oldest other index's connection goes
                kept.pop(next(iter(kept)))[1].close()
            uri = f"file:{quote(str(self.path.resolve()))}?mode=ro"
            held = kept[key] = (
                (st.st_dev, st.st_ino),
                sqlite3.connect(uri, uri=True, timeout=10.0),
            )
        try:
            yield held[1]
        except sqlite3.Error:
            kept.pop(key, None)
            held[1].close()
            raise

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with closing(sqlite3.connect(self.path, timeout=60.0, isolation_level=None)) as db:
            db.execute("PRAGMA journal_mode=DELETE")  # readers then never write a file
            db.execute("BEGIN IMMEDIATE")
            try:
                self._schema(db)
                yield db
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")

    @staticmethod
    def _schema(db: sqlite3.Connection) -> None:
        db.execute("CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT)")
        got = db.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
        if got is not None and got[0] != SCHEMA:
            for table in ("vocab", "chunks", "docs"):
                db.execute(f"DROP TABLE IF EXISTS {table}")
            db.execute("DELETE FROM meta")
        db.execute(
            "CREATE TABLE IF NOT EXISTS docs(row INTEGER PRIMARY KEY, id TEXT UNIQUE NOT NULL,"
            " source TEXT NOT NULL, file_type TEXT NOT NULL, vector BLOB)"
        )
        db.execute(
            "CREATE VIRTUAL TABLE IF NOT EXISTS chunks USING fts5(text,"
            " tokenize = 'unicode61 remove_diacritics 2')"
        )
        db.execute("CREATE VIRTUAL TABLE IF NOT EXISTS vocab USING fts5vocab(chunks, 'row')")
        db.execute("INSERT OR REPLACE INTO meta VALUES ('schema', ?)", (SCHEMA,))

    def state(self) -> dict[str, str]:
        """The index's meta (`version`, `collection`, `clean`); empty when there is none."""
        if not self.exists():
            return {}
        try:
            with self._read() as db:
                return dict(db.execute("SELECT key, value FROM meta").fetchall())
        except (sqlite3.Error, OSError) as exc:
            logger.debug("lexical index %s unreadable: %s", self.path, exc)
            return {}

    def ids(self) -> set[str]:
        """The chunk ids the index holds (none when there is no index)."""
        if not self.exists():
            return set()
        with self._read() as db:
            return {i for (i,) in db.execute("SELECT id FROM docs")}

    def mark_dirty(self) -> None:
        """Before an ingest writes: until `sync` ends, the index may be out of step."""
        if self.exists():
            with self._write() as db:
                db.execute("INSERT OR REPLACE INTO meta VALUES ('clean', '0')")

    def mark_clean(self, version: str) -> bool:
        """After an ingest that wrote nothing: in step again when the index holds `version`'s
        chunks (the store's version it was in step with before the ingest marked it); False
        when it does not (then only `sync` brings it in step)."""
        if not self.exists():
            return False
        with self._write() as db:
            got = db.execute("SELECT value FROM meta WHERE key = 'version'").fetchone()
            if got is None or got[0] != version:
                return False
            db.execute("INSERT OR REPLACE INTO meta VALUES ('clean', '1')")
        return True

    def sync(self, collection: Any, version: str) -> tuple[int, int]:
        """Make the index hold exactly `collection`'s chunks; record `version`. Returns how
        many chunks it added and deleted."""
        with self._write() as db:
            owner = db.execute("SELECT value FROM meta WHERE key = 'collection'").fetchone()
            if owner is not None and owner[0] != str(collection.id):  # a collection made anew
                db.execute("DELETE FROM docs")
                db.execute("DELETE FROM chunks")
            held = dict(db.execute("SELECT id, row FROM docs").fetchall())
            ids = set(collection.get(include=[])["ids"])
            extra = [held[i] for i in held if i not in ids]
            _delete_rows(db, extra)
            missing = sorted(ids.difference(held))
            _insert(db, collection, missing)
            _in_step(db, collection, version)
        return len(missing), len(extra)

    def apply(
        self, collection: Any, version: str, since: str, changes: dict[str, bool]
    ) -> tuple[int, int] | None:
        """Bring an index that held exactly `collection`'s chunks at the store's version `since`
        in step with `version`, given the ids one ingest wrote since (`changes`: for each id,
        whether it is in the collection now). Returns how many chunks it added and deleted, or
        None, changing nothing, when the index is not at `since` or would not end with as
        many chunks as the collection (then only `sync` brings it in step)."""
        if not self.exists():
            return None
        try:
            with self._write() as db:
                meta = dict(db.execute("SELECT key, value FROM meta").fetchall())
                if meta.get("version") != since or meta.get("collection") != str(collection.id):
                    return None
                ids = sorted(changes)  # an id written again is read again
                rows: list[int] = []
                deleted = 0
                for at in range(0, len(ids), _BATCH):
                    part = ids[at : at + _BATCH]
                    marks = ",".join("?" * len(part))
                    for row, id_ in db.execute(
                        f"SELECT row, id FROM docs WHERE id IN ({marks})", part
                    ):
                        rows.append(row)
                        deleted += not changes[id_]
                _delete_rows(db, rows)
                added = _insert(db, collection, [i for i in ids if changes[i]])
                count = db.execute("SELECT count(*) FROM docs").fetchone()[0]
                if count != collection.count():
                    raise _OutOfStep(f"{count} chunks in the index, {collection.count()} stored")
                _in_step(db, collection, version)
        except _OutOfStep as exc:
            logger.debug("lexical index %s not applied: %s", self.path, exc)
            return None
        return added, deleted

    def search(
        self, query: str, n: int, where: dict[str, Any] | None, version: str
    ) -> Proposal | None:
        """The `n` chunks that best match `query` by BM25 (ties by id), within the filters
        when their shape is known; None when the index cannot be read. `version` is the store's
        now: the proposal says whether the index is in step with it."""
        if not self.exists():
            return None
        terms = match_query(query)
        filters = _filters(where)
        sql, args = filters or ("", [])
        try:
            with self._read() as db:
                meta = dict(db.execute("SELECT key, value FROM meta").fetchall())
                if terms:
                    terms = self._rare(db, terms, int(meta.get("chunks", "0")))
                    found = self._best(db, " OR ".join(t for t, _ in terms), sql, args, n)
        except (sqlite3.Error, OSError) as exc:  # a killed writer's journal, read-only; gone
            logger.debug("lexical index %s unreadable: %s", self.path, exc)
            return None
        if not terms:
            return Proposal([], [], True)
        in_step = meta.get("clean") == "1" and meta.get("version") == version
        return Proposal([i for i, _ in found], [v for _, v in found], in_step and bool(filters))

    @staticmethod
    def _best(
        db: sqlite3.Connection, match: str, sql: str, args: list[str], n: int
    ) -> list[tuple[str, bytes]]:
        """(id, vector) of the `n` best matches by BM25, ties by id. FTS5 ranks rowids alone
        (`ORDER BY rank`: no row is read before the cut), `_TIES` more than asked so that rows
        tied at the cut are ordered by id; then only those rows are read."""
        join = " JOIN docs d ON d.row = chunks.rowid" if sql else ""
        ranked = db.execute(
            f"SELECT chunks.rowid, chunks.rank FROM chunks{join} WHERE chunks MATCH ?{sql}"
            " ORDER BY chunks.rank LIMIT ?",
            [match, *args, n + _TIES],
        ).fetchall()
        if not ranked:
            return []
        marks = ",".join("?" * len(ranked))
        rows = {
            row: (id_, vector)
            for row, id_, vector in db.execute(
                f"SELECT row, id, vector FROM docs WHERE row IN ({marks})", [r for r, _ in ranked]
            )
        }
        best = sorted((rank, rows[row][0], row) for row, rank in ranked if row in rows)
        return [rows[row] for _, _, row in best[:n]]

    @staticmethod
    def _rare(
        db: sqlite3.Connection, terms: list[tuple[str, str | None]], total: int
    ) -> list[tuple[str, Any]]:
        """`terms` without the words most of the `total` chunks hold (all of them if every one
        is common)."""
        words = [w for _, w in terms if w is not None]
        if not words:
            return list(terms)
        marks = ",".join("?" * len(words))
        seen = dict(db.execute(f"SELECT term, doc FROM vocab WHERE term IN ({marks})", words))
        kept = [(t, w) for t, w in terms if w is None or seen.get(w, 0) <= _COMMON * total]
        return kept or list(terms)


class _OutOfStep(Exception):
    """An incremental update would leave the index out of step: it is rolled back."""


def _delete_rows(db: sqlite3.Connection, rows: list[int]) -> None:
    for at in range(0, len(rows), _BATCH):
        part = [(r,) for r in rows[at : at + _BATCH]]
        db.executemany("DELETE FROM chunks WHERE rowid = ?", part)
        db.executemany("DELETE FROM docs WHERE row = ?", part)


def _insert(db: sqlite3.Connection, collection: Any, ids: list[str]) -> int:
    """Add the chunks `ids` names, as `collection` holds them (those it holds); returns how
    many."""
    added = 0
    for at in range(0, len(ids), _BATCH):
        got = collection.get(
            ids=ids[at : at + _BATCH], include=["documents", "metadatas", "embeddings"]
        )
        fetched = zip(
            got["ids"], got["documents"], got["metadatas"], got["embeddings"], strict=True
        )
        for id_, doc, meta, vector in fetched:
            meta = meta or {}
            source = str(meta.get("source", ""))
            row = db.execute(
                "INSERT INTO docs(id, source, file_type, vector) VALUES (?, ?, ?, ?)",
                (id_, source, str(meta.get("file_type", "")),
                 np.asarray(vector, dtype=np.float32).tobytes()),
            ).lastrowid  # fmt: skip
            db.execute(
                "INSERT INTO chunks(rowid, text) VALUES (?, ?)",
                (row, cjk_bigrams(_header(source) + (doc or ""))),
            )
            added += 1
    return added


def _in_step(db: sqlite3.Connection, collection: Any, version: str) -> None:
    """Record that the index holds `collection`'s chunks at the store's `version`."""
    count = db.execute("SELECT count(*) FROM docs").fetchone()[0]
    db.executemany(
        "INSERT OR REPLACE INTO meta VALUES (?, ?)",
        [("version", version), ("collection", str(collection.id)), ("clean", "1"),
         ("chunks", str(count))],
    )  # fmt: skip
