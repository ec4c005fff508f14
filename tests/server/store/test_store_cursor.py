"""Search cursors: walking a whole store accounts for each chunk once.

The store is built once per module with a deliberately coarse HNSW index (few neighbours), the
case where Chroma's approximate top-n lists differ most as n grows: the old paging (ask again
for the top offset+limit, slice) repeated and skipped chunks on such a store, and where HNSW
leaves chunks out, so the walks reach the exact ranking of the rest (`paging.extend`). The
walks run on a store of ~1,000 chunks in `make test`, and on one of over 5,000 (issue 39) in
`make test-full` (`full`): the same properties, five times the chunks and the time.
"""

from __future__ import annotations

import shutil
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import chromadb
import pytest
from chromadb.config import Settings
from cursor_walks import coarse_collection, matching, walk, write_corpus
from ragbudget_server.store import DocumentStore, StoreError

pytestmark = pytest.mark.slow  # the large store: ~7 s of CPU to build, its walks ~60 s

QUERIES = [f"w{i} w{i + 7} w{i + 19}" for i in range(0, 360, 20)] + ["zzz nothing", "{}()"]
LINES = 130
"""Lines a file: two lines a chunk (16 tokens by the default exact counter), 65 chunks a file."""

SIZES = {"small": (10, 6, 1000), "large": (50, 30, 5000)}
"""Files, copies of one of them (ties everywhere) and the chunks they make at least: ~1,040
chunks (every walk takes pages, and HNSW leaves chunks out of its lists), or ~5,200, just over
the 5,000 the walks must cover (issue 39); every chunk is read once a walk, so the walks' time
grows with it (7,900 chunks took half as much time again)."""


@pytest.fixture(scope="module", params=["small", pytest.param("large", marks=pytest.mark.full)])
def big(
    tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[tuple[DocumentStore, Path]]:
    files, copies, least = SIZES[request.param]
    root = tmp_path_factory.mktemp(f"cursor-walk-{request.param}")
    write_corpus(root / "src", files=files, lines=LINES)
    vendored = root / "src" / "vendor"  # copies of one file: ties everywhere
    vendored.mkdir()
    for i in range(copies):
        shutil.copy(root / "src" / "d1" / "f1.txt", vendored / f"copy{i}.txt")
    client = chromadb.PersistentClient(
        path=str(root / "db"), settings=Settings(anonymized_telemetry=False)
    )
    coarse_collection(client, "walk")
    store = DocumentStore(path=root / "db", collection="walk")
    report = store.ingest([root / "src"], chunk_tokens=16, overlap=0)
    assert report.chunks_added >= least
    everything = store.collection.count()
    found = store.collection.query(query_texts=[QUERIES[0]], n_results=everything, include=[])
    assert len(found["ids"][0]) < everything  # what the walks are for: HNSW leaves chunks out
    yield store, root
    store.close()


# Evidence pages compare their hits pairwise (near duplicates), so their pages stay small; plain
# pages are large. Every walk reads every chunk: a walk of the large store costs ~1-3 s of CPU.
# The 20 queries go 10 to each mode, in two tests (each well within the slow tests' timeout).
_SHAPES = [
    {"limit": 1000, "max_tokens": 1_000_000, "evidence": False},
    {"limit": 200, "max_tokens": 12_000, "evidence": True},
    {"limit": 1000, "max_tokens": 40_000, "evidence": False, "format": "json"},
    {"limit": 150, "max_tokens": 8_000, "evidence": True, "max_per_source": 40},
]


@pytest.mark.parametrize("evidence", [False, True], ids=["plain", "evidence"])
def test_twenty_walks_account_for_every_chunk_once(
    big: tuple[DocumentStore, Path], evidence: bool
) -> None:
    store, _ = big
    everything = matching(store)
    assert len(QUERIES) >= 20
    for n, query in enumerate(QUERIES):
        shape = _SHAPES[n % len(_SHAPES)]
        if shape["evidence"] is not evidence:
            continue  # the other test's query
        pages, seen = walk(store, query, **shape)
        assert len(pages) >= 2, (query, shape)  # a walk of pages
        repeated = [i for i, k in seen.items() if k > 1]
        assert not repeated, (query, shape, len(repeated))
        assert set(seen) == everything, (query, shape, len(everything - set(seen)))
        for page in pages:
            assert store.counter.count(page.to_text()) <= shape["max_tokens"]
            assert page.store_changed is None


def test_filters_and_ties_end_with_every_chunk_once(big: tuple[DocumentStore, Path]) -> None:
    store, root = big
    vendor = (root / "src" / "vendor").as_posix()
    cases: list[tuple[dict[str, Any], dict[str, Any]]] = [
        ({"directory": vendor}, {"dirs": {"$contains": vendor}}),
        ({"file_type": "md"}, {"file_type": "md"}),
        ({"directory": (root / "src" / "d2").as_posix(), "file_type": "md"},
         {"$and": [{"file_type": "md"}, {"dirs": {"$contains": (root / "src" / "d2").as_posix()}}]}),
    ]  # fmt: skip
    for args, where in cases:
        expected = matching(store, where)
        assert expected
        for query in ("w3 w4 w5", "nothing at all matches this"):
            for evidence in (False, True):
                _, seen = walk(store, query, limit=200, max_tokens=6000, evidence=evidence, **args)
                assert max(seen.values()) == 1 and set(seen) == expected, (args, query)


def test_offsets_are_exact_on_an_unchanged_store(big: tuple[DocumentStore, Path]) -> None:
    store, _ = big
    seen: Counter[str] = Counter()
    offset: int | None = 0
    while offset is not None:
        page = store.search("w40 w47 w59", offset=offset, limit=1000, max_tokens=40_000,
                            evidence=False)  # fmt: skip
        assert page.next_offset is None or page.next_offset > page.offset
        seen.update(page.accounted_ids())
        offset = page.next_offset
        if offset is not None and offset > 10_000:
            break
    assert max(seen.values()) == 1 and set(seen) == matching(store)


def test_a_cursor_belongs_to_its_search(big: tuple[DocumentStore, Path]) -> None:
    store, _ = big
    first = store.search("w1 w2", limit=5)
    assert first.next_cursor is not None
    with pytest.raises(StoreError, match="continues another search"):
        store.search("w1 w3", cursor=first.next_cursor)
    with pytest.raises(StoreError, match="has expired"):
        store.search("w1 w2", cursor="0123456789ab.5")
    with pytest.raises(StoreError, match="cursor must be"):
        store.search("w1 w2", cursor="nonsense")
    with pytest.raises(StoreError, match="not both"):
        store.search("w1 w2", cursor=first.next_cursor, offset=3)


def test_a_cursor_survives_a_new_process(big: tuple[DocumentStore, Path]) -> None:
    store, root = big
    first = store.search("w5 w6", limit=50, max_tokens=2000)
    assert first.next_cursor is not None
    other = DocumentStore(path=root / "db", collection="walk")  # another process's view
    try:
        second = other.search("w5 w6", cursor=first.next_cursor, limit=50, max_tokens=2000)
    finally:
        other.close()
    assert second.offset == first.next_offset
    assert not set(first.accounted_ids()) & set(second.accounted_ids())


def test_ingest_between_pages_keeps_the_snapshot(tmp_path: Path) -> None:
    src = tmp_path / "src"
    write_corpus(src, files=6, lines=60, seed=7)
    store = DocumentStore(path=tmp_path / "db", collection="moving")
    store.ingest([src], chunk_tokens=16, overlap=0)
    before = matching(store)
    try:
        first = store.search("w10 w11", limit=40, max_tokens=3000, evidence=False)
        assert first.next_cursor is not None and first.store_changed is None
        seen: Counter[str] = Counter(first.accounted_ids())
        writer = DocumentStore(path=tmp_path / "db", collection="moving")  # another process
        write_corpus(tmp_path / "more", files=2, lines=60, seed=9)
        (src / "d0" / "f0.md").write_text("w10 w11 replaced\n")  # its old chunks go
        writer.ingest([src, tmp_path / "more"], chunk_tokens=16, overlap=0)
        writer.close()
        cursor: str | None = first.next_cursor
        while cursor is not None:
            page = store.search("w10 w11", cursor=cursor, limit=40, max_tokens=3000,
                                evidence=False)  # fmt: skip
            assert page.store_changed is True
            assert page.notice and "The store changed" in page.notice
            assert store.counter.count(page.to_text()) <= 3000
            seen.update(page.accounted_ids())
            cursor = page.next_cursor
        assert max(seen.values()) == 1 and set(seen) == before  # the snapshot, exactly
    finally:
        store.close()


@pytest.mark.parametrize("evidence", [False, True])
def test_a_page_after_a_change_fits_every_budget_it_can_hold(
    tmp_path: Path, evidence: bool
) -> None:
    """A cursor page after another process's ingest carries the walk's fields (the cursor,
    `store_changed`): at every budget it either fits them or says the budget is too small, never
    "could not be fitted" (the page's retries kept back only the excess over the budget, so a
    page with room to spare came back the same four times)."""
    src = tmp_path / "src"
    write_corpus(src, files=4, lines=60, seed=3)
    store = DocumentStore(path=tmp_path / "db", collection="budgets")
    store.ingest([src], chunk_tokens=60, overlap=0)
    ask: dict[str, Any] = {"limit": 5, "format": "json", "concise": True, "evidence": evidence}
    try:
        first = store.search("w10 w11", max_tokens=2000, **ask)
        assert first.next_cursor is not None
        write_corpus(tmp_path / "more", files=2, lines=60, seed=9)
        writer = DocumentStore(path=tmp_path / "db", collection="budgets")  # another process
        writer.ingest([tmp_path / "more"], chunk_tokens=60, overlap=0)
        writer.close()
        fitted, refused = 0, []
        for budget in range(120, 600, 4):
            try:
                page = store.search("w10 w11", cursor=first.next_cursor, max_tokens=budget, **ask)
            except StoreError as exc:
                refused.append(str(exc))
                continue
            assert page.store_changed is True
            assert store.counter.count(page.to_text()) <= budget
            fitted += 1
        assert all("cannot hold" in why for why in refused), refused
        assert fitted > 60  # of 120 budgets: the smallest ones cannot hold a result
    finally:
        store.close()
