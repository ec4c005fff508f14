"""A file that becomes unindexable loses its stored chunks: search never returns its old text."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from ragbudget_server.store import DocumentStore, StoreError

MakeStore = Callable[..., DocumentStore]
OLD = "The quokka-zanzibar protocol retries three times.\n"


def _empty(path: Path) -> None:
    path.write_bytes(b"")


def _blank(path: Path) -> None:
    path.write_bytes(b"  \n\n\t\n")


def _binary(path: Path) -> None:
    path.write_bytes(b"\x00\x01\x02binary" * 10)


def _not_utf8(path: Path) -> None:
    # Not text in any encoding (a latin-1 "café au lait" is now detected and indexed).
    path.write_bytes(bytes(range(128, 256)) * 2)


def _too_big(path: Path) -> None:
    path.write_text("y" * 5000 + "\n", encoding="utf-8")


@pytest.mark.parametrize(
    ("spoil", "why"),
    [
        (_empty, "empty"),
        (_blank, "empty"),
        (_binary, "binary (NUL bytes)"),
        (_not_utf8, "not UTF-8 text"),
        (_too_big, "over the size cap"),
    ],
)
def test_an_unindexable_file_loses_its_chunks(
    make_store: MakeStore, tmp_path: Path, spoil: Callable[[Path], None], why: str
) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    target, other = folder / "notes.md", folder / "other.md"
    target.write_text(OLD * 20, encoding="utf-8")
    other.write_text("Unrelated text about gardens.\n", encoding="utf-8")
    store = make_store()
    store.ingest([folder], max_file_bytes=4096)
    assert store.search("quokka-zanzibar protocol").results[0].source == target.as_posix()
    held = len(store.collection.get(where={"source": target.as_posix()})["ids"])
    assert held >= 1

    spoil(target)
    report = store.ingest([folder], max_file_bytes=4096)

    (removed,) = report.files_removed
    assert removed.path == target.as_posix()
    assert removed.reason.startswith(why), removed.reason
    assert removed.reason.endswith(f"; its {held} stored chunks were removed")
    assert [p.path for p in report.files_skipped] == [target.as_posix()]
    assert report.chunks_deleted == held
    assert store.collection.get(where={"source": target.as_posix()})["ids"] == []
    results = store.search("quokka-zanzibar protocol").results
    assert all("quokka" not in r.text for r in results)
    with pytest.raises(StoreError, match="unknown source"):
        store.read(target.as_posix())
    assert store.read(other.as_posix()).text.startswith("Unrelated")

    again = store.ingest([folder], max_file_bytes=4096)  # nothing left to remove
    assert again.files_removed == [] and again.chunks_deleted == 0
    target.write_text(OLD, encoding="utf-8")  # indexable again: back in the store
    assert store.ingest([folder], max_file_bytes=4096).files_ingested == 1
    assert store.read(target.as_posix()).text == OLD.rstrip("\n")


def test_a_refused_file_loses_its_chunks(make_store: MakeStore, tmp_path: Path) -> None:
    target = tmp_path / "a.txt"
    target.write_text(OLD, encoding="utf-8")
    store = make_store()
    store.ingest([target])
    report = store.ingest([target], refuse=lambda path: "refused for the test")
    assert [p.reason for p in report.files_removed] == [
        "refused for the test; its 1 stored chunks were removed"
    ]
    assert store.collection.count() == 0
