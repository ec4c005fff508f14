"""Word .docx, PowerPoint .pptx and Excel .xlsx: their text in reading order, tables as tables.

Each file's zip is checked before a reader opens it (`limits.check_zip`: declared sizes and
expansion ratios), so a zip bomb is named and never unpacked. A password-protected Office file
is not a zip at all but an OLE container, and is named as encrypted.
"""

from __future__ import annotations

import io
import zipfile
from collections.abc import Iterable, Iterator
from typing import Any

try:
    import docx
    import openpyxl
    import pptx
except ImportError as _import_error:  # pragma: no cover - without the extra
    msg = (
        "Please install `python-docx`, `python-pptx` and `openpyxl` to index Office files, "
        'you can use the `documents` optional group — `pip install "ragbudget-server[documents]"`'
    )
    raise ImportError(msg) from _import_error

from ragbudget_server.store.convert.errors import Unindexable
from ragbudget_server.store.convert.limits import Limits, check_zip, page_marker
from ragbudget_server.store.convert.tables import markdown_rows

__all__ = ["docx_text", "pptx_text", "xlsx_text"]

_OLE = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"


def _opened(data: bytes, kind: str, limits: Limits, *, whole_xml: bool = True) -> io.BytesIO:
    """The bytes as a file for a reader, once the zip passed the checks (`whole_xml`: the
    reader parses each XML part whole, as python-docx and python-pptx do)."""
    if data.startswith(_OLE):
        msg = f"encrypted (a password-protected {kind}), or an old binary Office file"
        raise Unindexable(msg)
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            check_zip(archive, limits, whole_xml=whole_xml)
    except zipfile.BadZipFile as exc:
        msg = f"conversion failed: not a readable {kind} ({exc})"
        raise Unindexable(msg) from None
    return io.BytesIO(data)


class _Text:
    """Lines gathered under the text cap."""

    def __init__(self, limits: Limits) -> None:
        self.lines: list[str] = []
        self._size = 0
        self._limits = limits

    def add(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.lines.append(line)
            self._size += len(line) + 1
        self._limits.check_size(self._size)

    def text(self) -> str:
        return "\n".join(self.lines).strip("\n") + "\n"


def _paragraph(paragraph: Any) -> str:
    text = " ".join(paragraph.text.split("\n")).rstrip()
    style = getattr(getattr(paragraph, "style", None), "name", "") or ""
    if text and style.startswith("Heading ") and style[8:].isdigit():
        return "#" * min(int(style[8:]), 6) + " " + text
    if text and style == "Title":
        return "# " + text
    return text


def _table(table: Any) -> list[str]:
    return markdown_rows([cell.text for cell in row.cells] for row in table.rows)


def docx_text(data: bytes, limits: Limits) -> str:
    """Paragraphs (headings as `#` lines) and tables, in document order."""
    document = docx.Document(_opened(data, "Word file", limits))
    out = _Text(limits)
    for block in document.iter_inner_content():
        limits.check_time()
        if isinstance(block, docx.table.Table):
            out.add(["", *_table(block), ""])
        else:
            out.add([_paragraph(block)])
    return out.text()


def _shapes(shapes: Iterable[Any]) -> Iterator[list[str]]:
    for shape in shapes:
        if getattr(shape, "shape_type", None) == 6 and hasattr(shape, "shapes"):  # a group
            yield from _shapes(shape.shapes)
        elif getattr(shape, "has_table", False):
            yield ["", *_table(shape.table), ""]
        elif getattr(shape, "has_text_frame", False) and shape.text_frame.text.strip():
            yield shape.text_frame.text.replace("\x0b", "\n").split("\n")


def pptx_text(data: bytes, limits: Limits) -> str:
    """Each slide under a `--- slide N ---` line: its text frames and tables, then its notes."""
    presentation = pptx.Presentation(_opened(data, "PowerPoint file", limits))
    slides = list(presentation.slides)
    if len(slides) > limits.max_pages:
        msg = f"too many slides ({len(slides):,} > {limits.max_pages:,})"
        raise Unindexable(msg)
    out = _Text(limits)
    for number, slide in enumerate(slides, start=1):
        limits.check_time()
        out.add([*([""] if number > 1 else []), page_marker("slide", number)])
        for lines in _shapes(slide.shapes):
            out.add(lines)
        if slide.has_notes_slide:
            notes = slide.notes_slide.notes_text_frame
            if notes is not None and notes.text.strip():
                out.add(["", "Notes: " + " ".join(notes.text.split())])
    return out.text()


def xlsx_text(data: bytes, limits: Limits) -> str:
    """Each sheet as `## Sheet: NAME` and its cell values (not formulas) as a table."""
    book = openpyxl.load_workbook(
        _opened(data, "Excel file", limits, whole_xml=False), read_only=True, data_only=True
    )
    try:
        out = _Text(limits)
        for sheet in book.worksheets[: limits.max_pages]:
            limits.check_time()
            table = markdown_rows(_sheet_rows(sheet, limits))
            if table:
                out.add([f"## Sheet: {sheet.title}", "", *table, ""])
    finally:
        book.close()
    return out.text()


def _sheet_rows(sheet: Any, limits: Limits) -> list[list[Any]]:
    """The sheet's rows by the cells it really holds: the rows and columns with a value, in
    order. The sheet's stated dimension (a stray cell at XFD1048576 makes it 16,384 x
    1,048,576) is not read: every row would be padded to it, billions of empty cells. Time
    and size are checked as the rows come, not between sheets."""
    sheet.reset_dimensions()  # each row as long as its own last cell; missing rows empty
    kept: list[dict[int, Any]] = []
    used: set[int] = set()
    size = 0
    for row in sheet.iter_rows(values_only=True):
        limits.check_time()
        if not row:
            continue
        cells = {column: value for column, value in enumerate(row) if value is not None}
        if not cells:
            continue
        size += sum(len(str(value)) + 3 for value in cells.values())
        limits.check_size(size)
        used.update(cells)
        kept.append(cells)
    columns = sorted(used)
    return [[cells.get(column) for column in columns] for cells in kept]
