"""Fixtures for the document store: a real Chroma server, stores on both backends, corpora."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from ragbudget_server.store import DocumentStore

CHROMA = Path(sys.executable).with_name("chroma")
EVAL_PACKAGES = ("json", "email", "asyncio")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _heartbeat(port: int) -> bool:
    import urllib.request

    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v2/heartbeat", timeout=1) as r:
            return bool(r.status == 200)
    except OSError:
        return False


@pytest.fixture(scope="session", autouse=True)
def _lexical_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Server stores keep their lexical caches in the session's folder, not the user's."""
    old = os.environ.get("RAGBUDGET_CACHE")
    os.environ["RAGBUDGET_CACHE"] = str(tmp_path_factory.mktemp("ragbudget-cache"))
    yield
    if old is None:
        os.environ.pop("RAGBUDGET_CACHE", None)
    else:
        os.environ["RAGBUDGET_CACHE"] = old


@pytest.fixture(scope="session")
def chroma_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real `chroma run` on 127.0.0.1 and a free port, stopped at the end of the session."""
    if not CHROMA.exists():
        pytest.skip(f"the chroma binary is not at {CHROMA}")
    port = _free_port()
    data = tmp_path_factory.mktemp("chroma-server")
    log = (data.parent / "chroma-server.log").open("wb")
    env = {**os.environ, "ANONYMIZED_TELEMETRY": "False"}
    proc = subprocess.Popen(
        [str(CHROMA), "run", "--path", str(data), "--host", "127.0.0.1", "--port", str(port)],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=env,
    )
    try:
        deadline = time.monotonic() + 120  # servers took up to 27 s to start at load 8
        while not _heartbeat(port):
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"chroma run did not start (exit {proc.poll()}); see {log.name}")
            time.sleep(0.2)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


_counter = iter(range(1_000_000))


@pytest.fixture(params=["embedded", pytest.param("server", marks=pytest.mark.server)])
def make_store(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[Callable[..., DocumentStore]]:
    """Builds stores on the parametrized backend; each call a fresh collection by default."""
    stores: list[DocumentStore] = []

    def make(collection: str | None = None, **kwargs: Any) -> DocumentStore:
        name = collection or f"test-{os.getpid()}-{next(_counter)}"
        if request.param == "server":
            server = request.getfixturevalue("chroma_server")
            store = DocumentStore(server=server, path=None, collection=name, **kwargs)
        else:
            store = DocumentStore(path=tmp_path / "db", collection=name, **kwargs)
        stores.append(store)
        return store

    make.backend = request.param  # type: ignore[attr-defined]
    yield make
    for store in stores:
        store.close()


@pytest.fixture
def corpus(tmp_path: Path, stdlib: Path) -> Path:
    """A writable copy of the stdlib's `json` package (5 real files)."""
    target = tmp_path / "corpus" / "json"
    shutil.copytree(stdlib / "json", target, ignore=shutil.ignore_patterns("__pycache__"))
    return target


def _eval_store(
    tmp_path_factory: pytest.TempPathFactory, stdlib: Path, **where: Any
) -> DocumentStore:
    if "server" not in where:
        where["path"] = tmp_path_factory.mktemp("eval-db")
    store = DocumentStore(collection="stdlib-eval", **where)
    store.ingest([stdlib / name for name in EVAL_PACKAGES])
    return store


@pytest.fixture(scope="session")
def stdlib_store_embedded(
    tmp_path_factory: pytest.TempPathFactory, stdlib: Path
) -> Iterator[DocumentStore]:
    store = _eval_store(tmp_path_factory, stdlib)
    yield store
    store.close()


@pytest.fixture(scope="session")
def stdlib_store_server(
    tmp_path_factory: pytest.TempPathFactory, stdlib: Path, chroma_server: str
) -> Iterator[DocumentStore]:
    store = _eval_store(tmp_path_factory, stdlib, server=chroma_server, path=None)
    yield store
    store.close()


@pytest.fixture(params=["embedded", pytest.param("server", marks=pytest.mark.server)])
def stdlib_store(request: pytest.FixtureRequest) -> DocumentStore:
    """The stdlib's json, email and asyncio packages, ingested once per backend per session."""
    store: DocumentStore = request.getfixturevalue(f"stdlib_store_{request.param}")
    return store


Snapshot = Callable[[DocumentStore], dict[str, tuple[Any, ...]]]


@pytest.fixture(scope="session")
def snapshot() -> Snapshot:
    """Everything a collection holds, by id: document, metadata and embedding."""
    return _snapshot


def _snapshot(store: DocumentStore) -> dict[str, tuple[Any, ...]]:
    got = store.collection.get(include=["documents", "metadatas", "embeddings"])
    return {
        id_: (doc, dict(meta), np.asarray(emb, dtype=np.float32).tobytes())
        for id_, doc, meta, emb in zip(
            got["ids"], got["documents"], got["metadatas"], got["embeddings"], strict=True
        )
    }
