"""Search cursors on a Chroma server store: walks followed to the end account for every chunk
exactly once, plain and evidence, with the snapshots kept on the server (`ServerShelf`).

The store (~900 one-line chunks, a coarse HNSW index so that Chroma's approximate top-n lists
leave chunks out and the walks reach the exact ranking of the rest) lives in a collection of
the session's `chroma run` server; it is built once for the module.
"""

from __future__ import annotations

import shutil
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import chromadb
import pytest
from chromadb.config import Settings
from cursor_walks import coarse_collection, matching, walk, write_corpus
from ragbudget_server.store import DocumentStore

pytestmark = [pytest.mark.server, pytest.mark.slow]

COLLECTION = "cursor-walk-server"

WALKS: list[tuple[str, dict[str, Any]]] = [
    ("w3 w10 w22", {"limit": 100, "max_tokens": 4000, "evidence": False}),
    ("w150 w151", {"limit": 60, "max_tokens": 3000, "evidence": True}),
    ("w7 w8 w9", {"limit": 200, "max_tokens": 9000, "evidence": False, "format": "json"}),
    ("zzz nothing", {"limit": 80, "max_tokens": 3000, "evidence": True, "max_per_source": 5}),
]


@pytest.fixture(scope="module")
def server_store(
    chroma_server: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[DocumentStore, Path]]:
    root = tmp_path_factory.mktemp("cursor-walk-server")
    write_corpus(root / "src", files=12, lines=120, seed=3)  # two lines a chunk (exact)
    vendored = root / "src" / "vendor"  # copies of one file: ties
    vendored.mkdir()
    for i in range(4):
        shutil.copy(root / "src" / "d1" / "f1.txt", vendored / f"copy{i}.txt")
    url = urlsplit(chroma_server)
    client = chromadb.HttpClient(
        host=str(url.hostname), port=int(url.port or 8000),
        settings=Settings(anonymized_telemetry=False),
    )  # fmt: skip
    coarse_collection(client, COLLECTION)
    store = DocumentStore(server=chroma_server, path=None, collection=COLLECTION)
    report = store.ingest([root / "src"], chunk_tokens=16, overlap=0)
    assert report.chunks_added >= 800, report
    yield store, root
    store.close()


@pytest.mark.parametrize(("query", "shape"), WALKS, ids=[w[0] for w in WALKS])
def test_a_walk_on_a_server_store_accounts_for_every_chunk_once(
    server_store: tuple[DocumentStore, Path], query: str, shape: dict[str, Any]
) -> None:
    store, _ = server_store
    everything = matching(store)
    pages, seen = walk(store, query, **shape)
    assert len(pages) >= 3, len(pages)  # small budgets: several pages
    repeated = [i for i, k in seen.items() if k > 1]
    assert not repeated, len(repeated)
    assert set(seen) == everything, (len(everything - set(seen)), len(set(seen) - everything))
    for page in pages:
        assert store.counter.count(page.to_text()) <= shape["max_tokens"]
        assert page.store_changed is None
    side = f"{COLLECTION}-ragbudget-cursors"  # the snapshots live on the server
    assert side in {c.name for c in store._backend._client.list_collections()}


def test_a_filtered_walk_on_a_server_store_ends_with_every_chunk_once(
    server_store: tuple[DocumentStore, Path],
) -> None:
    store, root = server_store
    vendor = (root / "src" / "vendor").as_posix()
    expected = matching(store, {"dirs": {"$contains": vendor}})
    assert expected
    for evidence in (False, True):
        _, seen = walk(store, "w3 w4 w5", limit=50, max_tokens=2000, evidence=evidence,
                       directory=vendor)  # fmt: skip
        assert max(seen.values()) == 1 and set(seen) == expected, evidence


def test_another_client_continues_a_server_walk(
    server_store: tuple[DocumentStore, Path], chroma_server: str
) -> None:
    """Half a walk from one client, the rest from another (a process that opened the store
    afterwards): the cursor is the server's, so every chunk is accounted once."""
    store, _ = server_store
    ask: dict[str, Any] = {"limit": 40, "max_tokens": 2000, "evidence": True}
    seen: Counter[str] = Counter()
    cursor: str | None = None
    for _ in range(5):
        page = store.search("w40 w41", cursor=cursor, **ask)
        seen.update(page.accounted_ids())
        cursor = page.next_cursor
        assert cursor is not None
    other = DocumentStore(server=chroma_server, path=None, collection=COLLECTION)
    try:
        for _ in range(2000):
            page = other.search("w40 w41", cursor=cursor, **ask)
            seen.update(page.accounted_ids())
            cursor = page.next_cursor
            if cursor is None:
                break
    finally:
        other.close()
    assert cursor is None, "the walk must end"
    assert max(seen.values()) == 1 and set(seen) == matching(store)
