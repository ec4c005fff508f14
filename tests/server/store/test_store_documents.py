"""Documents: PDF pages cited by search and read, Office, CSV, HTML and e-mail converted, any
text encoding detected, and every file not indexed named with its reason (never a traceback)."""

from __future__ import annotations

import builtins
import io
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from document_files import (
    pdf_bytes,
    write_mixed_folder,
)
from ragbudget_server.cli import app
from ragbudget_server.store import DocumentStore, StoreError
from ragbudget_server.store.convert import Limits, Unindexable, convert, decode_text, looks_binary
from typer.testing import CliRunner

MakeStore = Callable[..., DocumentStore]

PAGES = [
    "Chapter one is about the lighthouse keeper and his lamp.",
    "Chapter two: the keeper counts forty-two albatross eggs on the cliff.\n" * 3,
    "Chapter three describes the storm and the broken lens.",
]

BAD = {  # the mixed folder's files that must be skipped, and a word of each reason
    "locked.pdf": "encrypted",
    "scan.pdf": "no text layer",
    "broken.pdf": "conversion failed",
    "bomb.docx": "zip bomb",
    "huge.pdf": "over the size cap",
    "pipe": "FIFO",
    "linked": "symbolic link",
    "link.md": "symbolic link",
}


def _mixed(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    root = tmp_path / "desktop"
    good = write_mixed_folder(root)
    os.mkfifo(root / "pipe")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "far.md").write_text("Text behind a symlinked folder.\n", encoding="utf-8")
    (root / "linked").symlink_to(elsewhere, target_is_directory=True)
    (root / "link.md").symlink_to(elsewhere / "far.md")
    return root, good


@pytest.mark.slow  # converts every kind of document: ~3 s of CPU
def test_a_mixed_folder_indexes_every_good_file_and_names_every_other(
    make_store: MakeStore, tmp_path: Path
) -> None:
    root, good = _mixed(tmp_path)
    store = make_store()
    report = store.ingest([root])
    reasons = {Path(p.path).name: p.reason for p in report.files_skipped}
    assert set(reasons) == set(BAD), reasons
    for name, word in BAD.items():
        assert word in reasons[name], (name, reasons[name])
    assert report.errors == []
    assert sorted(Path(s).name for s in store.sources()) == sorted(good)
    for name, phrase in good.items():
        hits = store.search(phrase, limit=3, max_tokens=2000).results
        assert hits[0].source.endswith(name), (name, [h.source for h in hits])
        assert phrase.split()[0] in store.read(hits[0].source).text


def test_search_results_and_read_cite_pdf_pages(make_store: MakeStore, tmp_path: Path) -> None:
    path = tmp_path / "book.pdf"
    path.write_bytes(pdf_bytes(PAGES))
    store = make_store()
    store.ingest([path], chunk_tokens=24, overlap=0)
    page = store.search("albatross eggs", max_tokens=3000, evidence=False)
    top = page.results[0]
    assert top.pages == "page 2", top
    assert "(page 2)" in page.to_text().splitlines()[0] + page.to_text()
    storm = store.search("storm broken lens", max_tokens=3000).results[0]
    assert storm.pages is not None and storm.pages.endswith("3"), storm
    # read_document pages by the same lines: page 2 starts at its marker line
    second = store.read(path.as_posix(), page=2, limit=2)
    assert second.text.splitlines()[0] == "--- page 2 ---"
    assert second.pages == "page 2"
    assert "(page 2)" in second.to_text().splitlines()[0]
    lines = store.read(path.as_posix(), offset=top.start_line, limit=1)
    assert lines.pages == "page 2"
    whole = store.read(path.as_posix())
    assert whole.pages == "pages 1-3" and whole.text.count("--- page ") == 3
    with pytest.raises(StoreError, match=r"page 9 is not in .*pages run 1-3"):
        store.read(path.as_posix(), page=9)


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ("Grüße aus München, où est la façade? Ça va.\n".encode("cp1252") * 3, "où est la façade"),
        ("Привет, как дела? Всё хорошо, спасибо.\n".encode("cp1251") * 3, "Всё хорошо"),
        ("UTF-16 with a BOM: naïve café\n".encode("utf-16"), "naïve café"),
        ("\ufeffUTF-8 with a BOM\n".encode(), "UTF-8 with a BOM"),
        ("UTF-16 LE, no BOM: naïve café\n".encode("utf-16-le") * 3, "naïve café"),
        ("UTF-16 BE, no BOM: naïve café\n".encode("utf-16-be") * 3, "naïve café"),
    ],
)
def test_text_encodings_are_detected(data: bytes, expected: str) -> None:
    text = decode_text(data)
    assert expected in text and not text.startswith("\ufeff")


def test_binary_with_nul_bytes_is_still_binary() -> None:
    # NULs where UTF-16 would have them, but decoding to control characters: not text.
    data = bytes(range(256)) * 40
    assert looks_binary(data)
    with pytest.raises(Unindexable, match="binary"):
        decode_text(data)
    assert not looks_binary("plain UTF-16 LE text\n".encode("utf-16-le") * 5)


def test_too_little_text_to_detect_is_named() -> None:
    with pytest.raises(Unindexable, match="too short"):
        decode_text("caf\xe9".encode("latin-1"))


def test_a_missing_reader_names_the_install_line(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    for name in [
        m for m in sys.modules if m.startswith(("pypdf", "ragbudget_server.store.convert.pdf"))
    ]:
        monkeypatch.delitem(sys.modules, name)
    real = builtins.__import__

    def no_pypdf(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "pypdf" or name.startswith("pypdf."):
            raise ImportError(f"No module named {name!r}", name=name)
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_pypdf)
    with pytest.raises(Unindexable, match=r'pip install "ragbudget-server\[documents\]"'):
        convert(tmp_path / "x.pdf", pdf_bytes(["text"]), Limits(max_text_chars=1000))


@pytest.mark.parametrize(
    ("suffix", "package", "what"),
    [(".xlsx", "openpyxl", "an Excel file"), (".pptx", "python-pptx", "a PowerPoint file")],
)
def test_a_missing_office_reader_is_named_for_its_own_kind(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, suffix: str, package: str, what: str
) -> None:
    # Only this kind's library is missing: the skip names it (not python-docx, which the
    # Office module happens to import first), and says how a checkout gets it.
    imports = {"openpyxl": "openpyxl", "python-pptx": "pptx"}[package]
    monkeypatch.delitem(sys.modules, "ragbudget_server.store.convert.office", raising=False)
    monkeypatch.setitem(sys.modules, imports, None)  # import of a None entry fails
    with pytest.raises(Unindexable) as caught:
        convert(tmp_path / f"x{suffix}", b"PK", Limits(max_text_chars=1000))
    message = str(caught.value)
    assert message.startswith(f"{what}, whose reader ({package}) is not installed"), message
    assert "uv run --extra documents" in message


def test_converted_text_is_held_to_the_text_cap() -> None:
    with pytest.raises(Unindexable, match="over the size cap once converted"):
        convert(Path("long.pdf"), pdf_bytes(["word " * 400] * 3), Limits(max_text_chars=1000))


@pytest.mark.process
def test_readers_load_only_when_a_document_is_met() -> None:
    code = (
        "import sys, ragbudget_server.store.ingest, ragbudget_server.store.files\n"
        "heavy = {'pypdf', 'docx', 'pptx', 'openpyxl', 'lxml'} & set(sys.modules)\n"
        "assert not heavy, heavy\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_the_cli_summary_names_every_skipped_file_and_stale_ones(tmp_path: Path) -> None:
    root, _good = _mixed(tmp_path)
    db = str(tmp_path / "db")
    first = CliRunner().invoke(app, ["ingest", str(root), "--db", db])
    assert first.exit_code == 0, first.output
    for name, word in BAD.items():
        line = next(x for x in first.stderr.splitlines() if x.startswith(f"skipped {root}/{name}:"))
        assert word in line, line
    assert "Traceback" not in first.output
    (root / "people.csv").unlink()
    again = CliRunner().invoke(app, ["ingest", str(root), "--db", db])
    assert again.exit_code == 0, again.output
    assert "1 documents under these paths are gone from disk but still searchable" in again.stderr
    assert f"ragbudget ingest {root} --prune" in again.stderr
    pruned = CliRunner().invoke(app, ["ingest", str(root), "--db", db, "--prune"])
    assert "gone from disk" not in pruned.stderr


def test_progress_names_the_file_being_read(make_store: MakeStore, tmp_path: Path) -> None:
    for name in ("a.md", "b.md", "c.md"):
        (tmp_path / name).write_text(f"# {name}\n\nText of {name}.\n", encoding="utf-8")
    calls: list[tuple[int, int, str]] = []
    make_store().ingest([tmp_path], on_progress=lambda d, t, p: calls.append((d, t, p)))
    assert [(d, Path(p).name) for d, _, p in calls] == [(1, "b.md"), (2, "c.md"), (3, "c.md")]


def test_a_sheet_with_a_far_cell_is_read_by_the_cells_it_holds() -> None:
    # Values in A1 and XFD1048576 (a 1.5 KB file) state a 16,384 x 1,048,576 sheet: reading
    # every row padded to that took minutes and 5.5 GB (this test's timeout stops the old
    # reader). Only the cells it holds are read: three columns, not 16,384.
    import openpyxl

    book = openpyxl.Workbook()
    sheet = book.active
    assert sheet is not None
    sheet["A1"] = "near"
    sheet["XFD1048576"] = "far"
    for row in range(2, 20):  # and rows that reach far too
        sheet.cell(row=row, column=1, value=f"r{row}")
        sheet.cell(row=row, column=16_000, value="x")
    buffer = io.BytesIO()
    book.save(buffer)
    data = buffer.getvalue()
    text = convert(Path("far.xlsx"), data, Limits(max_text_chars=1_000_000)).text
    lines = text.splitlines()
    assert lines[:4] == ["## Sheet: Sheet", "", "| near |  |  |", "| --- | --- | --- |"]
    assert lines[4] == "| r2 | x |  |" and lines[-1] == "|  |  | far |"


def test_a_word_file_with_a_huge_xml_part_is_skipped_before_it_is_parsed() -> None:
    # python-docx parses document.xml whole (60 MB of XML took 1.1 GB and 123 s): a part over
    # the cap is refused from the zip's declared sizes, before anything is unpacked.
    import zipfile

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("[Content_Types].xml", "<Types/>")
        archive.writestr("word/document.xml", "<w:p>" + "a" * (2 << 20) + "</w:p>")
    limits = Limits(max_text_chars=10**7, max_xml_bytes=1 << 20)
    with pytest.raises(Unindexable, match=r"part word/document\.xml is [\d,]+ bytes of XML"):
        convert(Path("big.docx"), buffer.getvalue(), limits)
