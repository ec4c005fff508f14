"""The Chroma side of the store: client, collection, its embedding and its counter."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ragbudget.counters import CounterSpec, TokenCounter, get_counter
from ragbudget.exact import default_spec

from ragbudget_server.store import live, remote, vector_index
from ragbudget_server.store.embedding import (
    embedding_label,
    embedding_model,
    make_embedding,
    same_embedding,
)
from ragbudget_server.store.errors import StoreError, chroma_error, damaged_store, is_damaged
from ragbudget_server.store.live import Signature
from ragbudget_server.store.lock import Locked, StoreAccess, release_lock_file, writer_lock
from ragbudget_server.store.remote import (
    DEFAULT_CONNECT_TIMEOUT,
    DEFAULT_READ_TIMEOUT,
    check_timeout,
)

__all__ = ["DEFAULT_PATH", "ChromaBackend", "content_version"]

logger = logging.getLogger(__name__)

DEFAULT_PATH = ".ragbudget"
COUNTER_KEY = "ragbudget_counter"
SKIPPED_KEY = "ragbudget_skipped"
"""Collection metadata: the files ingests left out, as JSON {path: reason} (`stats` lists them)."""
MAX_SKIPPED = 1000
"""Most skipped files remembered (the first by path); `stats` says how many there were."""
VERSION_KEY = "ragbudget_version"
"""Collection metadata: the store's version, `<chunks>-<digest>`, set after every ingest that
wrote (or may have written) chunks from what the store then holds (`content_version`); a
search cursor names the version it was ranked at."""
_NAME = re.compile(r"^[a-zA-Z0-9][a-zA-Z0-9._-]{1,510}[a-zA-Z0-9]$")
_PAGE = 5000
_MATCHING_KEPT = 64
"""Counts of matching chunks remembered (by filters and generation) before starting over."""


def _parse_server(server: Any) -> tuple[str, int, bool]:
    if not isinstance(server, str) or not server.strip():
        msg = f"server must be a URL like 'http://localhost:8000', got {server!r}"
        raise StoreError(msg)
    server = server.strip()
    url = urlsplit(server if "://" in server else f"http://{server}")
    if url.scheme not in ("http", "https") or not url.hostname or url.path not in ("", "/"):
        msg = f"server must be a URL like 'http://localhost:8000', got {server!r}"
        raise StoreError(msg)
    try:
        port = url.port or (443 if url.scheme == "https" else 8000)
    except ValueError:
        msg = f"server {server!r} has an invalid port"
        raise StoreError(msg) from None
    return url.hostname, port, url.scheme == "https"


def content_version(collection: Any) -> str:
    """The version naming what `collection` holds: `<chunks>-<digest>`, the digest of its
    sorted chunk ids and its embedding function's name and configuration.

    What a version keys is a function of exactly these: a search's ranking (ids and distances,
    kept under a key naming the version, `cursor.new_key`), the chunks a filter matches (a
    chunk's id hashes its source, its position and its text) and the lexical index's texts.
    So stores that hold the same chunks have the same version, and a search on them the same
    cursor and the same answer (issue 51: a random version gave each store its own cursor
    text, whose tokens moved the budget's cuts); a store rebuilt at the same path with other
    chunks or another embedding has another version, and never reads an old search's ranking.
    Reading the ids costs about 20 ms per 6,000 chunks (embedded), once per ingest that wrote.
    A metadata-only rewrite (the same chunk moved to other lines) keeps the version: rankings
    and filters are the same, and pages read each chunk's metadata afresh."""
    ids = sorted(collection.get(include=[])["ids"])
    embedding = (getattr(collection, "configuration_json", None) or {}).get("embedding_function")
    digest = hashlib.sha256(json.dumps(embedding, sort_keys=True, default=str).encode())
    for id_ in ids:
        digest.update(b"\0" + id_.encode())
    return f"{len(ids)}-{digest.hexdigest()[:16]}"


def _forget_system(path: Path) -> None:
    """Drop chromadb's cached client system for `path` after it failed to open: chromadb keeps
    a half-built one, and every later open in this process would fail with its own confusing
    error instead of the real one."""
    from chromadb.api.shared_system_client import SharedSystemClient

    cache = getattr(SharedSystemClient, "_identifier_to_system", None)
    if isinstance(cache, dict):
        cache.pop(str(path), None)


class ChromaBackend:
    """Opens (or, for an ingest, creates) one collection, embedded or on a server.

    Nothing is created on disk or on the server until something is written: opening a store
    that does not exist yet for a search is an error, not an empty database.
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None,
        server: str | None,
        collection: str,
        embedding: str | None,
        counter: CounterSpec,
        *,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
        read_timeout: float = DEFAULT_READ_TIMEOUT,
    ) -> None:
        if not isinstance(collection, str) or not _NAME.match(collection):
            msg = (
                "collection must be 3-512 characters from [a-zA-Z0-9._-], starting and ending "
                f"with a letter or digit, got {collection!r}"
            )
            raise StoreError(msg)
        if server is not None and path not in (None, DEFAULT_PATH):
            shown = os.fspath(path)
            msg = f"give either path or server, not both (path={shown!r}, server={server!r})"
            raise StoreError(msg)
        if server is None and path is None:
            msg = "give a path (embedded Chroma) or a server URL"
            raise StoreError(msg)
        self.connect_timeout = check_timeout("connect_timeout", connect_timeout)
        self.read_timeout = check_timeout("read_timeout", read_timeout)
        if path is not None and "\0" in os.fspath(path):
            msg = f"path must be a folder path, got {os.fspath(path)!r}"
            raise StoreError(msg)
        self.address = _parse_server(server) if server is not None else None
        self.server = server.strip() if server is not None else None
        self.path = None if server is not None else Path(os.fspath(path or DEFAULT_PATH))
        self.name = collection
        self.ef: Any = make_embedding(embedding) if embedding is not None else None
        self._counter_spec = counter
        spec = counter if counter is not None else default_spec()
        self.counter: TokenCounter = get_counter(spec)
        self.counter_spec: str | None = spec if isinstance(spec, str) else None
        """The spec `counter` was built from, when it was one (None: a counter object), so that
        the ingest's planning helper can build the same counter."""
        self._client: Any = None
        self._collection: Any = None
        self._snapshot: Path | None = None  # a read-only store's private copy
        self._access = StoreAccess(self.path) if self.path is not None else None
        self._watch = live.StoreWatch(self.path, self.generation) if self.path else None
        self._gate = live.Gate()
        self._opening = threading.RLock()
        self._writing = 0
        self._matching: dict[tuple[str, Signature], int] = {}

    @property
    def where(self) -> str:
        return self.server or str(self.path)

    def _connect(self, *, create: bool) -> Any:
        if self._client is not None:
            return self._client
        import chromadb
        from chromadb.config import Settings

        settings = Settings(anonymized_telemetry=False)
        if self.address is not None:
            host, port, ssl = self.address
            try:
                client = remote.connect(
                    host, port, ssl, settings, where=str(self.server),
                    connect_timeout=self.connect_timeout, read_timeout=self.read_timeout,
                )  # fmt: skip
            except StoreError:
                raise
            except Exception as exc:
                msg = f"cannot reach the Chroma server at {self.server}: {exc}"
                raise StoreError(msg) from exc
            self._client = client
            return client
        assert self.path is not None
        if not live.check_store_dir(self.path):
            if not create:
                return None
        elif not create and not live.is_writable(self.path):
            with self._reading():  # no write while it is copied
                self._snapshot = live.snapshot(self.path)
        elif create and not live.is_writable(self.path):
            raise live.read_only(self.path)
        if self._watch is not None:
            self._watch.seen()  # before opening: a write from now on shows as a change
        folder = self._snapshot or self.path
        access = self._access if self._snapshot is None else None  # a private copy: no lock
        try:
            with self._reading():
                self._check_index(folder)
                client = chromadb.PersistentClient(path=str(folder), settings=settings)
        except StoreError:
            self._drop_snapshot()
            raise
        except Exception as exc:
            _forget_system(self._snapshot or self.path)
            self._drop_snapshot()
            if live.is_read_only_error(exc):
                raise live.read_only(self.path) from None
            if is_damaged(exc):
                raise chroma_error(str(self.path), exc, embedded=True) from None
            reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            msg = f"cannot open the store at {self.path}: {reason}"
            raise StoreError(msg) from None
        self._client = client if access is None else Locked(client, access)
        return self._client

    def _reading(self) -> AbstractContextManager[None]:
        """The access lock, shared, while the store is read in place (a private copy of a
        read-only store needs none: no other process writes it)."""
        if self._access is None or self._snapshot is not None:
            return nullcontext()
        return self._access.hold(exclusive=False)

    def _check_index(self, folder: Path) -> None:
        """A damaged vector index file is an error here: Chroma's native code would crash the
        process on it (`store.vector_index`)."""
        problem = vector_index.damage(folder)
        if problem is not None:
            raise damaged_store(str(self.path), "vector index", problem)

    def open(self, *, create: bool) -> Any:
        """The collection, opened (its embedding checked) or, with `create`, made; else None.

        One thread opens at a time: two threads of a server opening the client at once (the
        first calls after a reopen) each built a chromadb client, and one of them failed with
        chromadb's half-built system (`'RustBindingsAPI' object has no attribute 'bindings'`)."""
        if self._collection is not None:
            return self._collection
        with self._opening:
            return self._open(create=create)

    def _open(self, *, create: bool) -> Any:
        if self._collection is not None:
            return self._collection
        client = self._connect(create=False)
        if client is not None:
            names = [getattr(c, "name", c) for c in client.list_collections()]
            if self.name in names:
                self._collection = self._adopt(client.get_collection(self.name))
                return self._collection
        if not create:
            return None
        ef = self.ef or make_embedding("hashing")
        self.embed(["probe"], ef)  # a missing model fails here, before anything is written
        client = self._connect(create=True)
        self._collection = client.get_or_create_collection(
            self.name,
            embedding_function=ef,
            configuration={"hnsw": {"space": "cosine"}},
            metadata={COUNTER_KEY: self.counter.name},
        )
        self.ef = ef
        return self._collection

    def _adopt(self, collection: Any) -> Any:
        config = (collection.configuration_json or {}).get("embedding_function") or {}
        built_with = str(config.get("name") or "default")
        if self.ef is not None and not same_embedding(built_with, self.ef.name()):
            msg = (
                f"collection {self.name!r} was built with embedding "
                f"{embedding_label(built_with)!r}, not {embedding_label(self.ef.name())!r}"
            )
            raise StoreError(msg)
        recorded_config = config.get("config") if isinstance(config.get("config"), dict) else None
        built_model = embedding_model(recorded_config)
        asked_model = embedding_model(self.ef.get_config()) if self.ef is not None else None
        if built_model is not None and asked_model is not None and built_model != asked_model:
            msg = (
                f"collection {self.name!r} was built with embedding model {built_model!r}, "
                f"not {asked_model!r}"
            )
            raise StoreError(msg)
        if self.ef is None:
            self.ef = make_embedding(built_with, recorded_config)
        recorded = (collection.metadata or {}).get(COUNTER_KEY)
        if self._counter_spec is None and isinstance(recorded, str):
            try:
                self.counter, self.counter_spec = get_counter(recorded), recorded
            except Exception as exc:  # e.g. an hf tokenizer file that is not here
                logger.warning("cannot rebuild counter %r (%s); using the estimate", recorded, exc)
        return collection

    def record_counter(self) -> None:
        """Note the store's counter in the collection's metadata (stored counts are in it)."""
        collection = self.require()
        metadata = dict(collection.metadata or {})
        if metadata.get(COUNTER_KEY) != self.counter.name:
            collection.modify(metadata={**metadata, COUNTER_KEY: self.counter.name})

    def skipped(self) -> tuple[dict[str, str], int]:
        """The files earlier ingests left out ({path: reason}, at most MAX_SKIPPED), and how
        many there were."""
        raw = (self.require().metadata or {}).get(SKIPPED_KEY)
        try:
            held = json.loads(raw) if isinstance(raw, str) else {}
        except ValueError:
            held = {}
        files = held.get("files") if isinstance(held, dict) else None
        total = held.get("total") if isinstance(held, dict) else None
        if not isinstance(files, dict):
            return {}, 0
        listed = {str(k): str(v) for k, v in files.items()}
        return listed, total if isinstance(total, int) else len(listed)

    def record_skipped(self, roots: list[Path], found: dict[str, str]) -> None:
        """Remember the files this ingest under `roots` left out, replacing what earlier
        ingests said of the files under the same roots."""
        held, _ = self.skipped()
        prefixes = [r.as_posix().rstrip("/") for r in roots]
        kept = {
            path: why
            for path, why in held.items()
            if not any(path == p or path.startswith(p + "/") for p in prefixes)
        }
        merged = dict(sorted({**kept, **found}.items()))
        listed = dict(list(merged.items())[:MAX_SKIPPED])
        value = json.dumps({"files": listed, "total": len(merged)}, ensure_ascii=False)
        collection = self.require()
        metadata = dict(collection.metadata or {})
        if metadata.get(SKIPPED_KEY) != value:
            collection.modify(metadata={**metadata, SKIPPED_KEY: value})

    def version(self) -> str:
        """The store's version (`VERSION_KEY`; "0" for a store no ingest has versioned yet),
        read afresh from a Chroma server (another process may have ingested)."""
        collection = self.require()
        if self.server is not None:
            collection = self._client.get_collection(self.name)
        value = (collection.metadata or {}).get(VERSION_KEY)
        return value if isinstance(value, str) else "0"

    def bump_version(self) -> None:
        """Give the store the version of what it holds now (`content_version`)."""
        collection = self.require()
        if self.server is not None:
            collection = self._client.get_collection(self.name)
        metadata = dict(collection.metadata or {})
        version = content_version(collection)
        if metadata.get(VERSION_KEY) != version:
            metadata[VERSION_KEY] = version
            collection.modify(metadata=metadata)

    def embed(self, texts: list[str], ef: Any = None, *, query: bool = False) -> Any:
        """Embeddings of `texts`; a failing embedding is a StoreError that says what to do."""
        ef = ef or self.ef
        try:
            if query and hasattr(ef, "embed_query"):
                return ef.embed_query(texts)
            return ef(texts)
        except Exception as exc:
            label = embedding_label(ef.name())
            msg = f"embedding {label!r} failed: {exc}"
            if label == "minilm":
                msg += (
                    " (it downloads Chroma's ONNX MiniLM model on first use: check the network, "
                    "or use embedding='hashing', which works offline)"
                )
            raise StoreError(msg) from exc

    def require(self) -> Any:
        """The collection, or a StoreError saying it does not exist yet."""
        collection = self.open(create=False)
        if collection is None and self._client is None and self.path is not None:
            raise live.no_store(self.path)
        if collection is None:
            msg = (
                f"unknown collection {self.name!r} at {self.where}: ingest files first "
                "(`ragbudget ingest PATH` or DocumentStore.ingest)"
            )
            raise StoreError(msg)
        return collection

    def metadatas(
        self, where: dict[str, Any] | None = None
    ) -> Iterator[tuple[str, dict[str, Any]]]:
        """(id, metadata) of every record matching `where`, page by page."""
        collection = self.require()
        offset = 0
        while True:
            page = collection.get(where=where, include=["metadatas"], limit=_PAGE, offset=offset)
            for id_, meta in zip(page["ids"], page["metadatas"] or [], strict=True):
                yield id_, dict(meta or {})
            if len(page["ids"]) < _PAGE:
                return
            offset += _PAGE

    def matching(self, where: dict[str, Any] | None) -> int:
        """How many chunks match the filters `where` (None: all).

        An embedded store counts once while its content stays the same: its generation
        (`live.signature`, which every write changes) is a read of a fraction of a millisecond,
        where a count grows with the store (2.4 ms at 20K chunks). A Chroma server counts at
        each call."""
        collection = self.require()

        def count() -> int:
            if where is None:
                return int(collection.count())
            return len(collection.get(where=where, include=[])["ids"])

        generation = self.generation() if self.path else None
        if generation is None:
            return count()
        key = (json.dumps(where, sort_keys=True), generation)
        found = self._matching.get(key)
        if found is None:
            if len(self._matching) >= _MATCHING_KEPT:
                self._matching.clear()
            found = self._matching[key] = count()
        return found

    def generation(self, *, records: bool = False) -> Signature:
        """The embedded store's `live.signature` (`records_signature` with `records`), read
        as a Chroma call is, under the access lock. A read in one thread, stepping SQLite,
        while another thread's Chroma call (which keeps the GIL as it waits for the database)
        wanted to write was a deadlock: the read held the database and waited for the GIL."""
        path = self._snapshot or self.path
        if path is None:
            return None
        read = live.records_signature if records else live.signature
        with self._reading():
            return read(path)

    def close(self) -> None:
        with self._opening:
            client, self._client, self._collection = self._client, None, None
            if client is not None and hasattr(client, "close"):
                client.close()
            if self._access is not None:
                self._access.close()
            self._drop_snapshot()

    def _drop_snapshot(self) -> None:
        copy, self._snapshot = self._snapshot, None
        if copy is not None:
            live.remove_snapshot(copy)

    @contextmanager
    def using(self) -> Iterator[None]:
        """One call on the store: first reopen the client if another process wrote the store.

        Chroma's embedded client caches vector indexes; reopening is how a long-running
        process (a server) sees what another ingested, changed or pruned.
        """
        watch = self._watch
        stale = watch is not None and self._gate.outermost() and not self._writing
        if stale and watch is not None and watch.changed():
            with self._gate.exclusive():
                if watch.changed() and not self._writing:
                    logger.debug("the store at %s changed on disk: reopening it", self.path)
                    self.close()
        with self._gate.shared():
            yield

    @contextmanager
    def writing(self) -> Iterator[None]:
        """An ingest: the store's writer lock held (writers, in any process, take turns), the
        client current before it writes, and no refresh while it writes."""
        if self.path is None:  # a Chroma server orders its own writes
            with self.using():
                yield
            return
        if self._snapshot is not None or (
            live.check_store_dir(self.path) and not live.is_writable(self.path)
        ):
            raise live.read_only(self.path)
        created = not self.path.exists()
        try:
            with writer_lock(self.path), self.using():
                self._writing += 1
                try:
                    yield
                finally:
                    self._writing -= 1
                    if self._watch is not None and self._client is not None:
                        self._watch.seen()  # our own writes: the client holds them already
        finally:
            if not (self.path / live.SQLITE_NAME).exists():  # nothing was written: leave no trace
                release_lock_file(self.path, remove_folder=created)
