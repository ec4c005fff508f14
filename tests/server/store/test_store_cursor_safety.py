"""Cursor snapshots in the user's private folder: a folder another user planted (a link to the
victim's files) is never written to or emptied; a damaged snapshot is discarded and the search
ranks afresh; a cursor error tells nothing of another search."""

from __future__ import annotations

import gzip
import hashlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from ragbudget_server.store import DocumentStore, StoreError
from ragbudget_server.store import cursor as cursors

pytestmark = pytest.mark.skipif(not hasattr(os, "getuid"), reason="POSIX users")

QUERY = "decode a JSON document"


@pytest.fixture
def own_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A system temporary folder of the test's own (as another user would share /tmp)."""
    tmp = tmp_path / "systmp"
    tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    monkeypatch.setattr(cursors, "_own", None, raising=False)
    monkeypatch.setattr(cursors, "_swept", set(), raising=False)
    return tmp


@pytest.fixture
def store(tmp_path: Path, stdlib: Path) -> Iterator[DocumentStore]:
    documents = DocumentStore(path=tmp_path / "db")
    documents.ingest([stdlib / "json"])
    yield documents
    documents.close()


def _snapshots(folder: Path) -> list[Path]:
    return sorted(folder.rglob("*.json.gz"))


def test_snapshots_go_to_a_private_folder(own_tmp: Path, store: DocumentStore) -> None:
    first = store.search(QUERY, limit=2, max_tokens=300)
    assert first.next_cursor is not None
    folder = own_tmp / f"{cursors.FOLDER}-{os.getuid()}"
    assert folder.is_dir() and not folder.is_symlink()
    assert folder.stat().st_mode & 0o777 == 0o700
    assert _snapshots(folder)
    again = store.search(QUERY, limit=2, max_tokens=300, cursor=first.next_cursor)
    assert again.results and again.offset == first.next_offset


def test_a_planted_link_is_not_followed(
    own_tmp: Path, store: DocumentStore, tmp_path: Path
) -> None:
    # Another local user made the folder first, as a link to a folder of the victim's files.
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "thesis.txt").write_text("years of work\n", encoding="utf-8")
    (victim / "old").mkdir()
    (victim / "old" / "notes.json.gz").write_bytes(gzip.compress(b"{}"))
    os.utime(victim / "old" / "notes.json.gz", (0, 0))  # expired, by its age
    (own_tmp / f"{cursors.FOLDER}-{os.getuid()}").symlink_to(victim)
    # and at the name earlier releases used (the store's path hashed: predictable), where an
    # expired-looking file of the victim's stood to be "forgotten"
    backend = store._backend  # where earlier releases put the store's snapshots
    digest = hashlib.sha256(str(backend.path.resolve()).encode()).hexdigest()[:16]
    (own_tmp / f"{cursors.FOLDER}-{os.getuid()}-{digest}").symlink_to(victim)
    (victim / backend.name).mkdir()
    (victim / backend.name / "0123456789ab.json.gz").write_bytes(b"precious")
    os.utime(victim / backend.name / "0123456789ab.json.gz", (0, 0))
    before = sorted(p.relative_to(victim) for p in victim.rglob("*"))

    first = store.search(QUERY, limit=2, max_tokens=300)  # still pages, from a private folder
    assert first.next_cursor is not None
    assert store.search(QUERY, limit=2, max_tokens=300, cursor=first.next_cursor).results
    assert sorted(p.relative_to(victim) for p in victim.rglob("*")) == before
    assert (victim / "thesis.txt").read_text(encoding="utf-8") == "years of work\n"


def test_a_folder_open_to_others_is_not_used(own_tmp: Path, store: DocumentStore) -> None:
    shared = own_tmp / f"{cursors.FOLDER}-{os.getuid()}"
    shared.mkdir(mode=0o777)
    shared.chmod(0o777)
    store.search(QUERY, limit=2, max_tokens=300)
    assert not _snapshots(shared)  # a private one of the process's instead


@pytest.mark.parametrize(
    "damage",
    ["empty", "truncated", "not gzip", "a gzip bomb", "gzip of junk"],
)
def test_a_damaged_snapshot_is_discarded_and_the_search_ranks_afresh(
    own_tmp: Path, store: DocumentStore, damage: str
) -> None:
    first = store.search(QUERY, limit=2, max_tokens=300)
    (snapshot,) = _snapshots(own_tmp)
    whole = snapshot.read_bytes()
    snapshot.write_bytes(
        {
            "empty": b"",
            "truncated": whole[: len(whole) // 2],
            "not gzip": b"garbage" * 10,
            "a gzip bomb": gzip.compress(b"\0" * (cursors.MAX_SNAPSHOT_BYTES + 1024), 9),
            "gzip of junk": gzip.compress(b"[1, 2"),
        }[damage]
    )
    again = store.search(QUERY, limit=2, max_tokens=300)  # a fresh search: ranked again
    assert [r.id for r in again.results] == [r.id for r in first.results]
    assert again.next_cursor == first.next_cursor
    assert store.search(QUERY, limit=2, max_tokens=300, cursor=again.next_cursor).results
    store.ingest([Path(__file__)])  # an ingest reads the snapshots too: it goes on


def test_a_cursor_error_tells_nothing_of_another_search(
    own_tmp: Path, store: DocumentStore
) -> None:
    first = store.search("the secret project name", limit=1, max_tokens=200, directory="json")
    assert first.next_cursor is not None
    with pytest.raises(StoreError, match="continues another search") as caught:
        store.search(QUERY, cursor=first.next_cursor)
    assert "secret" not in str(caught.value) and "json" not in str(caught.value)


def test_folders_of_stores_no_longer_searched_are_removed(
    own_tmp: Path, store: DocumentStore
) -> None:
    base = own_tmp / f"{cursors.FOLDER}-{os.getuid()}"
    base.mkdir(mode=0o700)
    stale = base / "0123456789abcdef" / "ragbudget"
    stale.mkdir(parents=True)
    (stale / "0123456789ab.json.gz").write_bytes(b"old")
    os.utime(stale / "0123456789ab.json.gz", (0, 0))
    fresh = base / "fedcba9876543210" / "ragbudget"
    fresh.mkdir(parents=True)
    (fresh / "ba9876543210.json.gz").write_bytes(b"new")
    store.search(QUERY, limit=2, max_tokens=300)
    assert not stale.parent.exists() and fresh.exists()
