"""`DocumentStore`: files in, budgeted search and reads out, on embedded Chroma or a server."""

from __future__ import annotations

import functools
import logging
import os
from collections.abc import Sequence
from pathlib import PurePosixPath
from typing import Any

from ragbudget.counters import CounterSpec, TokenCounter, get_counter
from ragbudget.text import shown

from ragbudget_server._defaults import DEFAULT_MAX_DOCUMENT_BYTES, DEFAULT_MAX_FILE_BYTES
from ragbudget_server.store import hybrid as _hybrid
from ragbudget_server.store import ingest as _ingest
from ragbudget_server.store import live
from ragbudget_server.store.backend import DEFAULT_PATH, ChromaBackend
from ragbudget_server.store.embedding import describe_embedding
from ragbudget_server.store.errors import StoreError
from ragbudget_server.store.models import (
    MAX_STATS_SKIPPED,
    FileProblem,
    Format,
    IngestReport,
    ReadResponse,
    SearchResponse,
    StoreStats,
)
from ragbudget_server.store.pages import page_line, page_starts, span_pages
from ragbudget_server.store.paging import (
    freeze_cursors,
    ranking_for,
    save_ranking,
    search_page,
)
from ragbudget_server.store.paths import user_path
from ragbudget_server.store.reading import budget_read, rebuild_text
from ragbudget_server.store.remote import (
    DEFAULT_CONNECT_TIMEOUT,
    DEFAULT_READ_TIMEOUT,
    guarded,
    server_errors,
)
from ragbudget_server.store.search import Rendering

__all__ = ["DEFAULT_PATH", "DocumentStore"]

logger = logging.getLogger(__name__)

MAX_LIMIT = 1000
MAX_OFFSET = 10_000
MAX_TOKENS = 1_000_000
MAX_QUERY_CHARS = 10_000
MAX_FILE_BYTES = DEFAULT_MAX_FILE_BYTES
MAX_DOCUMENT_BYTES = DEFAULT_MAX_DOCUMENT_BYTES


def _check_int(name: str, value: Any, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        msg = f"{name} must be an int, got {value!r}"
        raise StoreError(msg)
    if not low <= value <= high:
        msg = f"{name} must be between {low:,} and {high:,}, got {value:,}"
        raise StoreError(msg)
    return value


class DocumentStore:
    """Budgeted search over your files, kept in a Chroma collection.

    Setup:
        `pip install ragbudget-server` (the store, the CLI and the MCP server).

    Key init args:
        path: folder of the embedded Chroma database (default `.ragbudget`).
        server: a Chroma server URL instead, e.g. `"http://localhost:8000"` (not with `path`).
        collection: collection name (default `"documents"`).
        embedding: `"hashing"` (default: offline, deterministic, lexical), `"minilm"` (Chroma's
            own ONNX model, downloaded once), any embedding function name Chroma knows, or a
            local sentence-transformers model folder (needs `sentence-transformers`). `None`
            takes whatever an existing collection was built with. Opening a collection with
            another embedding than its own is an error.
        counter: the token counter chunk sizes and stored counts use (any `get_counter` spec);
            by default the one the collection was built with, else `exact` (the larger of the
            exact cl100k and o200k counts, by bpe-openai), or the estimate without bpe-openai.
        connect_timeout, read_timeout: seconds to wait for a Chroma server to accept a
            connection (10) and for the next bytes of each answer (30); a server that does not
            answer in time is a StoreError naming it. Unused by an embedded store.

    Instantiate:
        >>> store = DocumentStore(path=".ragbudget")  # doctest: +SKIP

    Use:
        >>> report = store.ingest(["src/", "README.md"])  # doctest: +SKIP
        >>> page = store.search("how are retries configured", max_tokens=4000)  # doctest: +SKIP
        >>> print(page.to_text())  # at most 4,000 tokens, notice included  # doctest: +SKIP
        >>> more = store.search("retries", offset=page.next_offset)  # doctest: +SKIP
        >>> store.read(page.results[0].source, offset=1, max_tokens=2000)  # doctest: +SKIP

    Ingesting again writes nothing for unchanged files; a changed file's chunks are replaced;
    `prune=True` removes the chunks of files that are gone. An ingest killed midway and run again
    ends exactly as an uninterrupted one.
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None = DEFAULT_PATH,
        server: str | None = None,
        collection: str = "documents",
        embedding: str | None = "hashing",
        counter: CounterSpec = None,
        *,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
        read_timeout: float = DEFAULT_READ_TIMEOUT,
    ) -> None:
        self._backend = ChromaBackend(
            path, server, collection, embedding, counter,
            connect_timeout=connect_timeout, read_timeout=read_timeout,
        )  # fmt: skip
        b = self._backend
        with server_errors(b.server, b.connect_timeout, b.read_timeout):
            b.open(create=False)  # an existing collection's embedding is checked now
        self._sources: list[str] | None = None  # cached for suffix look-ups in read()

    @property
    def collection(self) -> Any:
        """The chromadb Collection (StoreError if nothing was ingested into it yet)."""
        return self._backend.require()

    @property
    def counter(self) -> TokenCounter:
        """The token counter chunk sizes and stored token counts use."""
        return self._backend.counter

    def close(self) -> None:
        """Release the Chroma client (the store opens it again when used afterwards)."""
        self._backend.close()

    def __enter__(self) -> DocumentStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        b = self._backend
        where = f"server={b.server!r}" if b.server else f"path={str(b.path)!r}"
        return f"DocumentStore({where}, collection={b.name!r})"

    # -- reading the collection ---------------------------------------------------------------

    @guarded
    @live.reads
    def sources(self) -> list[str]:
        """Every stored document's source path, sorted."""
        found = sorted({str(m["source"]) for _, m in self._backend.metadatas() if "source" in m})
        self._sources = found
        return found

    def _fetch(self, source: str) -> tuple[str, list[tuple[str, dict[str, Any]]]]:
        """A document's chunks, by its stored path, its path from here, or a unique suffix."""
        if not isinstance(source, str) or not source.strip():
            msg = f"source must be a stored document's path, got {shown(source)}"
            raise StoreError(msg)
        collection = self._backend.require()

        def get(candidate: str) -> list[tuple[str, dict[str, Any]]]:
            got = collection.get(where={"source": candidate}, include=["documents", "metadatas"])
            return [
                (doc or "", dict(meta or {}))
                for doc, meta in zip(got["documents"], got["metadatas"], strict=True)
            ]

        for candidate in dict.fromkeys([source, user_path("source", source).as_posix()]):
            if records := get(candidate):
                return candidate, records
        tail = "/" + source.strip().lstrip("./").replace(os.sep, "/")
        for refresh in (False, True):  # the cached list first, then the collection's own
            known = self.sources() if refresh or self._sources is None else self._sources
            matches = [s for s in known if s.endswith(tail)]
            if len(matches) == 1 and (records := get(matches[0])):
                return matches[0], records
            if len(matches) > 1 and refresh:
                listed = ", ".join(matches[:5]) + (", ..." if len(matches) > 5 else "")
                msg = (
                    f"source {shown(source)} is ambiguous: it matches {listed}; give the full path"
                )
                raise StoreError(msg)
        msg = (
            f"unknown source {shown(source)}: no such document in collection "
            f"{self._backend.name!r}; search first and pass a result's source"
        )
        raise StoreError(msg)

    # -- ingest ---------------------------------------------------------------------------------

    @guarded
    @live.writes
    def ingest(
        self,
        paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
        *,
        chunk_tokens: int = 512,
        overlap: int = 64,
        prune: bool = False,
        on_progress: _ingest.Progress | None = None,
        max_file_bytes: int = MAX_FILE_BYTES,
        batch_size: int = 256,
        refuse: _ingest.Refuse | None = None,
        max_document_bytes: int = MAX_DOCUMENT_BYTES,
    ) -> IngestReport:
        """Chunk and store the text, code and document files under `paths`; see the class
        docstring and `ragbudget_server.store.convert` for the document kinds.

        A text file may hold `max_file_bytes`; a PDF or Office file `max_document_bytes` on
        disk and `max_file_bytes` characters of text once converted.
        `on_progress(done_files, total_files, next_path)` is called after each file, with the
        path of the file read next (the last one's own at the end).
        `refuse(path)` may return why a file found must be left out (the MCP server's rule for
        hard links); such a file is skipped like an empty or binary one. A file that is left
        out but has chunks stored from an earlier ingest loses them (`files_removed` says so),
        so a search never returns text the file no longer holds.
        """
        roots = _ingest.check_roots(paths)
        _check_int("chunk_tokens", chunk_tokens, 16, 100_000)
        _check_int("overlap", overlap, 0, chunk_tokens - 1)
        _check_int("max_file_bytes", max_file_bytes, 1, 1 << 31)
        _check_int("batch_size", batch_size, 1, 5000)
        _check_int("max_document_bytes", max_document_bytes, 1, 1 << 40)
        wrote = True  # until the report says otherwise: a failed ingest may have written
        if self._backend.open(create=False) is not None:
            freeze_cursors(self._backend)  # walks past their ranked ids keep to today's chunks
        in_step = _hybrid.before_ingest(self._backend)
        changes = _ingest.Changes()
        try:
            report = _ingest.ingest_files(
                self._backend, roots, chunk_tokens=chunk_tokens, overlap=overlap, prune=prune,
                on_progress=on_progress, max_file_bytes=max_file_bytes, batch_size=batch_size,
                refuse=refuse, max_document_bytes=max_document_bytes, changes=changes,
            )  # fmt: skip
            wrote = bool(report.chunks_added or report.chunks_deleted or report.sources_pruned)
            return report
        finally:
            self._sources = None  # the documents stored may have changed
            if wrote and self._backend.open(create=False) is not None:
                self._backend.bump_version()  # search cursors see the store changed
            written = changes.present if changes.complete else None
            _hybrid.after_ingest(self._backend, wrote, in_step, written)  # the lexical index

    # -- search and read ------------------------------------------------------------------------

    @guarded
    @live.reads
    def search(
        self,
        query: str,
        *,
        limit: int = 10,
        max_tokens: int = 8192,
        offset: int = 0,
        concise: bool = False,
        file_type: str | None = None,
        directory: str | None = None,
        counter: CounterSpec = None,
        format: Format = "text",
        offset_hint: str = "offset={offset}",
        evidence: bool = True,
        max_per_source: int | None = None,
        cursor: str | None = None,
        hybrid: bool = True,
        stated_budget: int | None = None,
    ) -> SearchResponse:
        """The best-ranked chunks for `query` whose rendered response fits `max_tokens`.

        `offset` skips that many ranked results (continue with the response's `next_offset`);
        `limit` caps the results per page; `concise` returns short snippets and fewer fields;
        `file_type` ("py", "md", ...) and `directory` filter by file. `format` is how the
        answer renders (`to_text()`): "text" (results verbatim under one-line headers) or
        "json"; the budget holds for that rendering. `offset_hint` is how notices name the
        continuation (`--offset {offset}` for a shell).

        `evidence` (the default) spends the budget on distinct evidence: adjacent chunks of a
        file merge into one span, duplicates leave, and when the budget cannot hold the results
        it should show, each gets a fair share and a long one shows its lines that best match
        the query (see `ragbudget_server.store.selection`); False: the plain ranked prefix of whole
        chunks. `max_per_source` caps the results per file (with `evidence`).

        A page with more to show gives a `next_cursor`: pass it as `cursor` (same query and
        filters) to continue the ranking the first page made, which no later page repeats or
        skips, even when the store changes meanwhile (the page then says so). A cursor lasts
        an hour (`ragbudget_server.store.cursor`). `offset` pages are exact while the store does
        not change: each search ranks every matching chunk the same way.

        `stated_budget`: the budget the notice and the JSON's `max_tokens` state, when it is not
        `max_tokens` (a server fits the page to less, to keep room for a line of its own above
        it, and states the whole answer's budget once).

        `hybrid` fuses the vector ranking with the lexical index's BM25 ranking
        (`ragbudget_server.store.hybrid`), so exact identifiers, rare words and CJK text find
        their files (the default: on 46 held-out questions it ranks the answer's file first for
        27, vectors alone for 19; docs/retrieval-quality.md); False ranks by vectors alone.
        A store whose index the next ingest has yet to build ranks by vectors alone
        (`stats().lexical` says so).
        """
        if not isinstance(query, str) or not query.strip():
            msg = f"query must be a non-empty string, got {shown(query)}"
            raise StoreError(msg)
        if len(query) > MAX_QUERY_CHARS:
            msg = f"query is {len(query):,} characters; the most is {MAX_QUERY_CHARS:,}"
            raise StoreError(msg)
        _check_int("limit", limit, 1, MAX_LIMIT)
        _check_int("max_tokens", max_tokens, 1, MAX_TOKENS)
        _check_int("offset", offset, 0, MAX_OFFSET)
        rendering = Rendering.of(format, offset_hint, stated_budget)
        tc = self._backend.counter if counter is None else get_counter(counter)
        where = self._where(file_type, directory)
        backend = self._backend
        backend.require()  # no store, no collection: the error says so before any work

        # The collection is looked up at each use, not once here: another process's ingest
        # makes the live store reopen its client mid-search, and a handle of the old client
        # finds none of the records the new one ranked.
        def total() -> int:
            return backend.matching(where)

        def records(ids: list[str]) -> dict[str, tuple[str, dict[str, Any]]]:
            return self._records(backend.require(), ids)

        return search_page(
            backend, query=query, where=where, offset=offset, cursor=cursor, limit=limit,
            total=total, max_tokens=max_tokens, counter=tc, rendering=rendering, records=records,
            concise=bool(concise), evidence=bool(evidence), max_per_source=max_per_source,
            lexical=_hybrid.proposer(backend) if hybrid else None,
        )  # fmt: skip

    def _ranked(
        self,
        collection: Any,
        query: str,
        n: int,
        where: dict[str, Any] | None,
        hybrid: bool = True,
    ) -> list[tuple[str, float]]:
        """The first `n` `(id, distance)` pairs of the ranking `search` pages read (its
        snapshot, extended and kept as a page would)."""
        key, ranking, _, grew, _ = ranking_for(
            self._backend, query=query, where=where, offset=0, cursor=None, limit=n,
            total=functools.partial(self._backend.matching, where),
            lexical=_hybrid.proposer(self._backend) if hybrid else None,
        )  # fmt: skip
        if grew:
            save_ranking(self._backend, key, ranking)
        return list(zip(ranking.ids[:n], ranking.distances[:n], strict=True))

    @guarded
    @live.reads
    def candidates(
        self,
        query: str,
        *,
        limit: int = 10,
        offset: int = 0,
        file_type: str | None = None,
        directory: str | None = None,
        hybrid: bool = True,
    ) -> list[tuple[str, str, float, int | None]]:
        """The ranked candidates a `search` with the same arguments budgets: `(id, source,
        score, stored token count)` for ranks `offset` to `offset + limit` of the same ranking
        (the search's snapshot, `ragbudget_server.store.cursor`), for explaining what a budget
        kept, cut and dropped (`ragbudget search --explain`)."""
        _check_int("limit", limit, 1, MAX_LIMIT)
        _check_int("offset", offset, 0, MAX_OFFSET)
        collection = self._backend.require()
        where = self._where(file_type, directory)
        ranked = self._ranked(collection, query, offset + limit, where, bool(hybrid))[offset:]
        records = self._records(collection, [i for i, _ in ranked])
        metas = [(i, d, records[i][1]) for i, d in ranked if i in records]
        return [(i, str(m["source"]), round(1.0 - d, 4),
                 m["tokens"] if isinstance(m.get("tokens"), int) else None)
                for i, d, m in metas]  # fmt: skip

    @staticmethod
    def _records(collection: Any, ids: list[str]) -> dict[str, tuple[str, dict[str, Any]]]:
        """{id: (document, metadata)} of the records among `ids` that exist."""
        got = collection.get(ids=ids, include=["documents", "metadatas"])
        rows = zip(got["ids"], got["documents"] or [], got["metadatas"] or [], strict=True)
        return {i: (d or "", dict(m or {})) for i, d, m in rows}

    def _folder_clause(self, directory: str) -> dict[str, Any]:
        """The filter for `directory`: an absolute (or `~`) path as given; a relative one, as
        answers print paths (`json`, `docs/office`), matches each stored folder it ends, else
        is taken from the server's working folder."""
        if not directory.startswith(("/", "~")):
            tail = directory.strip().strip("/")
            folders = {str(PurePosixPath(source).parent) for source in self.sources()}
            ends = sorted(f for f in folders if f == tail or f.endswith("/" + tail))
            tops = [f for f in ends if not any(f.startswith(o + "/") for o in ends)]
            if len(tops) == 1:
                return {"dirs": {"$contains": tops[0]}}
            if tops:
                return {"$or": [{"dirs": {"$contains": folder}} for folder in tops]}
        return {"dirs": {"$contains": user_path("directory", directory).as_posix()}}

    def _where(self, file_type: str | None, directory: str | None) -> dict[str, Any] | None:
        clauses: list[dict[str, Any]] = []
        if file_type is not None:
            if not isinstance(file_type, str) or not file_type.strip(". "):
                msg = f"file_type must be an extension such as 'py' or 'md', got {shown(file_type)}"
                raise StoreError(msg)
            clauses.append({"file_type": file_type.strip(". ").lower()})
        if directory is not None:
            if not isinstance(directory, str) or not directory.strip():
                msg = f"directory must be a folder path, got {shown(directory)}"
                raise StoreError(msg)
            clauses.append(self._folder_clause(directory))
        if not clauses:
            return None
        return clauses[0] if len(clauses) == 1 else {"$and": clauses}

    @guarded
    @live.reads
    def read(
        self,
        source: str,
        *,
        offset: int = 1,
        limit: int | None = None,
        max_tokens: int = 8192,
        counter: CounterSpec = None,
        char_offset: int = 0,
        format: Format = "text",
        offset_hint: str = "offset={offset}",
        page: int | None = None,
        stated_budget: int | None = None,
    ) -> ReadResponse:
        """A stored document's lines from `offset` (1-based), at most `limit` of them, with a
        rendered response within `max_tokens` and a notice saying how to continue (`format`
        and `offset_hint` as for `search`).

        A line alone over the budget comes in parts: continue with the response's
        `next_offset` and `next_char_offset` (as `offset` and `char_offset`). `page` (of a
        PDF, or a presentation's slide) starts at that page's first line instead of `offset`;
        the response's `pages` names the pages its lines lie on. `stated_budget` as for
        `search`."""
        rendering = Rendering.of(format, offset_hint, stated_budget)
        _check_int("offset", offset, 1, 1 << 31)
        _check_int("char_offset", char_offset, 0, 1 << 31)
        if limit is not None:
            _check_int("limit", limit, 1, 1 << 31)
        _check_int("max_tokens", max_tokens, 1, MAX_TOKENS)
        tc = self._backend.counter if counter is None else get_counter(counter)
        if page is not None:
            _check_int("page", page, 1, 1 << 31)
        resolved, records = self._fetch(source)
        text = rebuild_text(records)
        unit = next((m.get("page_unit") for _, m in records if m.get("page_unit")), None)
        pages = None
        if isinstance(unit, str):
            starts = page_starts(text, unit)
            pages = functools.partial(span_pages, starts, unit)
        if page is not None:
            found = page_line(text, unit, page) if isinstance(unit, str) else None
            if found is None:
                what = f"its {unit}s run 1-{len(starts)}" if pages else "it has no pages"
                msg = f"page {page} is not in {resolved}: {what}; read it by offset (lines)"
                raise StoreError(msg)
            offset, char_offset = found, 0
        return budget_read(
            resolved, text, offset=offset, limit=limit, max_tokens=max_tokens, counter=tc,
            char_offset=char_offset, rendering=rendering, pages=pages,
        )  # fmt: skip

    @guarded
    @live.reads
    def stats(self) -> StoreStats:
        """How many documents and chunks the collection holds, and how it was built."""
        b = self._backend
        collection = self._backend.require()
        sources = {str(m.get("source")) for _, m in self._backend.metadatas()}
        skipped, skipped_count = self._backend.skipped()
        listed = list(skipped.items())[:MAX_STATS_SKIPPED]
        return StoreStats(
            collection=self._backend.name,
            documents=len(sources),
            chunks=collection.count(),
            embedding=describe_embedding(b.ef) if b.ef is not None else "unknown",
            counter=self._backend.counter.name,
            path=str(b.path.resolve()) if b.path is not None else None,
            server=b.server,
            files_skipped=[FileProblem(path=p, reason=why) for p, why in listed],
            files_skipped_count=skipped_count,
            lexical=_hybrid.lexical_state(b),
        )
