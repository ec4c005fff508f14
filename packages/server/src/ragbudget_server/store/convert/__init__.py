"""Documents to text: PDF, Word, PowerPoint, Excel, CSV, HTML and e-mail, and plain text in
any common encoding, each turned into the text the store chunks, searches and reads by lines.

`convert(path, data, limits)` is the one entry point: it picks the reader by the file's suffix
and returns a `Converted` text, or raises `Unindexable` with the reason the ingest report gives
(encrypted, no text layer, conversion failed, a zip bomb, over a cap, a reader not installed).

Layout of the text: a PDF's page N starts at a line `--- page N ---`, a presentation's slide N
at `--- slide N ---`; a sheet starts at `## Sheet: NAME`; tables (CSV, sheets, Word and
PowerPoint tables, HTML tables) are Markdown tables, a row a line. The PDF, Word, PowerPoint and
Excel readers come with the `documents` extra (`pip install "ragbudget-server[documents]"`);
without it such files are skipped with that install line. CSV, HTML, e-mail and text need only
the standard library and charset-normalizer.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import PurePath
from typing import cast

from ragbudget_server.store.convert.errors import Unindexable
from ragbudget_server.store.convert.limits import MARKER, Limits, page_marker
from ragbudget_server.store.convert.text import decode_text, looks_binary

__all__ = [
    "CONVERTER_VERSION",
    "EXTRA_INSTALL",
    "KINDS",
    "MARKER",
    "Converted",
    "Limits",
    "Unindexable",
    "convert",
    "decode_text",
    "kind_of",
    "looks_binary",
    "page_marker",
]

CONVERTER_VERSION = "2"
"""Bumped when a reader's output changes, so converted files are read again on the next ingest."""

EXTRA_INSTALL = (
    'pip install "ragbudget-server[documents]" (from a checkout: uv run --extra documents)'
)
"""How to get the document readers: an installed server's extra, or a checkout's."""


@dataclass(frozen=True)
class Kind:
    """One document kind: its label, the module and function that read it, the unit its
    marker lines count, and whether its reader comes with the `documents` extra (those files
    are binary on disk: held to the document size cap, not the text one)."""

    label: str
    module: str
    function: str
    unit: str | None = None
    extra: bool = True
    package: str = ""
    """The distribution of the reader's library (`openpyxl`), named when it is missing."""
    imports: str = ""
    """What the reader imports (`openpyxl`): checked first, so the skip names this kind's."""


KINDS: dict[str, Kind] = {
    ".pdf": Kind("PDF", "pdf", "pdf_text", unit="page", package="pypdf", imports="pypdf"),
    ".docx": Kind("Word", "office", "docx_text", package="python-docx", imports="docx"),
    ".pptx": Kind(
        "PowerPoint", "office", "pptx_text", unit="slide", package="python-pptx", imports="pptx"
    ),
    ".xlsx": Kind("Excel", "office", "xlsx_text", package="openpyxl", imports="openpyxl"),
    ".xlsm": Kind("Excel", "office", "xlsx_text", package="openpyxl", imports="openpyxl"),
    ".csv": Kind("CSV", "tables", "csv_table", extra=False),
    ".tsv": Kind("TSV", "tables", "tsv_table", extra=False),
    ".html": Kind("HTML", "web", "html_text", extra=False),
    ".htm": Kind("HTML", "web", "html_text", extra=False),
    ".xhtml": Kind("HTML", "web", "html_text", extra=False),
    ".eml": Kind("e-mail", "web", "eml_text", extra=False),
}
"""The document kinds by suffix; any other file is read as plain text."""


@dataclass(frozen=True)
class Converted:
    """A document's text, and the unit its marker lines count (`"page"`, `"slide"`, None)."""

    text: str
    unit: str | None = None


def kind_of(path: PurePath) -> Kind | None:
    """The document kind of `path` by its suffix; None for plain text."""
    return KINDS.get(path.suffix.lower())


Reader = Callable[[bytes, Limits], str]


def _reader(kind: Kind) -> Reader:
    try:
        if kind.imports:
            importlib.import_module(kind.imports)
        module = importlib.import_module(f"{__name__}.{kind.module}")
    except ImportError as exc:
        missing = kind.package or getattr(exc.__cause__, "name", None) or "its reader"
        article = "an" if kind.label[:1] in "AEIOU" else "a"
        msg = f"{article} {kind.label} file, whose reader ({missing}) is not installed: "
        raise Unindexable(msg + EXTRA_INSTALL) from None
    return cast(Reader, getattr(module, kind.function))


def convert(path: PurePath, data: bytes, limits: Limits) -> Converted:
    """`data` (the bytes of the file at `path`) as text; Unindexable naming why it cannot be.

    A reader's own failure on a malformed file (any exception but MemoryError's kin) is
    "conversion failed" with its message: a bad file never stops an ingest.
    """
    kind = kind_of(path)
    if kind is None:
        text = decode_text(data)
        limits.check_size(len(text))
        return Converted(text)
    read = _reader(kind)
    try:
        text = read(data, limits)
    except Unindexable:
        raise
    except (RecursionError, MemoryError):
        msg = f"conversion failed: the {kind.label} file is too deeply nested or too large"
        raise Unindexable(msg) from None
    except Exception as exc:  # a reader's error on a malformed file
        detail = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
        msg = f"conversion failed: not a readable {kind.label} file ({detail})"
        raise Unindexable(msg) from None
    limits.check_size(len(text))
    if not text.strip() or (kind.unit and all(MARKER.match(x) for x in text.split("\n") if x)):
        what = "no text layer (a scanned PDF?)" if kind.label == "PDF" else "no text"
        raise Unindexable(what)
    return Converted(text, kind.unit)
