"""Pages of a converted document: where they start, and which pages a span of lines covers.

A PDF's page N (a presentation's slide N) starts at the line `--- page N ---` (`--- slide N
---`) of its stored text. Each chunk's metadata holds `page_unit`, `page` (the page its first
line is on), `page_end` (its last line's) and, when pages start inside it, `page_breaks` (those
lines). A search result cites its pages from the marker lines it shows and, for the lines
before the first of those, from its chunk's metadata; `read` finds a page by its marker line.
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping
from typing import Any

from ragbudget_server.store.convert import MARKER

__all__ = ["chunk_pages", "cite", "page_line", "page_starts", "span_pages"]


def page_starts(text: str, unit: str) -> list[tuple[int, int]]:
    """`(line, page number)` of each marker line of `unit` in `text`, lines 1-based."""
    starts = []
    for index, line in enumerate(text.split("\n"), start=1):
        found = MARKER.match(line)
        if found and found.group(1) == unit:
            starts.append((index, int(found.group(2))))
    return starts


def _page_at(starts: list[tuple[int, int]], line: int) -> int:
    i = bisect.bisect_right([at for at, _ in starts], line) - 1
    return starts[i][1] if i >= 0 else (starts[0][1] if starts else 1)


def chunk_pages(starts: list[tuple[int, int]], start_line: int, end_line: int) -> dict[str, Any]:
    """The page metadata of a chunk spanning `start_line` to `end_line`."""
    meta: dict[str, Any] = {
        "page": _page_at(starts, start_line),
        "page_end": _page_at(starts, end_line),
    }
    breaks = [line for line, _ in starts if start_line < line <= end_line]
    if breaks:  # Chroma refuses empty lists
        meta["page_breaks"] = breaks
    return meta


def cite(meta: Mapping[str, Any], text: str, start_line: int) -> str | None:
    """ "page 3" or "pages 3-4" for `text` shown from `start_line` of the chunk with `meta`;
    None for a document without pages."""
    unit, first = meta.get("page_unit"), meta.get("page")
    if not isinstance(unit, str) or not isinstance(first, int):
        return None
    shown = [(i, MARKER.match(line)) for i, line in enumerate(text.split("\n"))]
    marks = [(i, int(m.group(2))) for i, m in shown if m and m.group(1) == unit]
    breaks = meta.get("page_breaks")
    if marks:
        low = marks[0][1] if marks[0][0] == 0 else marks[0][1] - 1
        high = marks[-1][1]
    else:  # no page starts in what is shown: it is all on the page of its first line
        earlier = [b for b in breaks if b <= start_line] if isinstance(breaks, list) else []
        low = high = first + len(earlier)
    low = max(low, 1)
    return f"{unit} {low}" if low >= high else f"{unit}s {low}-{high}"


def span_pages(starts: list[tuple[int, int]], unit: str, start_line: int, end_line: int) -> str:
    """ "page 3" or "pages 3-4": the pages lines `start_line` to `end_line` lie on."""
    low, high = _page_at(starts, start_line), _page_at(starts, end_line)
    return f"{unit} {low}" if low >= high else f"{unit}s {low}-{high}"


def page_line(text: str, unit: str, number: int) -> int | None:
    """The line page `number` starts at in `text`; None when it has no such page."""
    return next((line for line, n in page_starts(text, unit) if n == number), None)
