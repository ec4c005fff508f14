"""Rows of cells as a Markdown table: one row a line, so a table stays a readable table when
chunked, searched and read by lines (CSV, Excel sheets, Word and PowerPoint tables)."""

from __future__ import annotations

import csv
from collections.abc import Iterable, Sequence

from ragbudget_server.store.convert.errors import Unindexable
from ragbudget_server.store.convert.limits import Limits
from ragbudget_server.store.convert.text import decode_text

__all__ = ["csv_table", "markdown_rows", "tsv_table"]


def _cell(value: object) -> str:
    text = "" if value is None else str(value)
    return " ".join(text.split()).replace("|", "\\|")


def markdown_rows(rows: Iterable[Sequence[object]]) -> list[str]:
    """`| a | b |` lines, the first row as the header (followed by `| --- | --- |`); rows
    with no text are left out, and every row is padded to the widest."""
    cells = [[_cell(v) for v in row] for row in rows]
    cells = [row for row in cells if any(row)]
    if not cells:
        return []
    width = max(len(row) for row in cells)
    while width > 1 and not any(len(row) >= width and row[width - 1] for row in cells):
        width -= 1  # trailing columns empty everywhere
    lines = []
    for i, row in enumerate(cells):
        padded = (row + [""] * width)[:width]
        lines.append("| " + " | ".join(padded) + " |")
        if i == 0:
            lines.append("|" + " --- |" * width)
    return lines


def tsv_table(data: bytes, limits: Limits) -> str:
    """A tab-separated file's rows as a Markdown table."""
    return csv_table(data, limits, delimiter="\t")


def csv_table(data: bytes, limits: Limits, *, delimiter: str | None = None) -> str:
    """A CSV file's rows as a Markdown table; its delimiter sniffed when not given."""
    text = decode_text(data)
    limits.check_size(len(text))
    if delimiter is None:
        try:
            delimiter = csv.Sniffer().sniff(text[:8192], delimiters=",;\t|").delimiter
        except csv.Error:
            delimiter = ","
    try:
        rows = list(csv.reader(text.splitlines(), delimiter=delimiter))
    except csv.Error as exc:
        msg = f"conversion failed: not a readable CSV file ({exc})"
        raise Unindexable(msg) from None
    return "\n".join(markdown_rows(rows)) + "\n"
