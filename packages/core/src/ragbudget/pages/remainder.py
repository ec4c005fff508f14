"""Pages of what a cut result left out, each within a token budget, that join back exactly.

`first_page` cuts a result (a text after a line, a JSON list or object by trailing items,
characters and, as a last resort, keys at any depth) to the largest first page within a budget,
and keeps what it left out as a `Remainder`: the original result (a text, or a JSON value) and its
segments, one per cut, each saying where the shown part stopped. The units left (characters
of a text or string, items of a list, keys of an object) are numbered 0, 1, 2, ... across the
segments in order; that number is the `offset` a continuation asks for. Offsets never move:
when a page meets a single list item too big for any page, the item is shown trimmed and its
own cuts are added as new segments at the end.

Pages of a text result are raw text, cut after a line (a lone line longer than the budget is
cut at a paragraph, sentence or word boundary). Pages of a JSON result are JSON objects that
say where they belong, e.g. `{"path": ["items"], "start": 120, "items": [...]}`; `join_pages`
puts a result back together from its first page and its continuation pages.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from typing import Any

from ragbudget.counters import TokenCounter, count_up_to
from ragbudget.fitting import cut_text, largest_cut, largest_fitting, whole_fits
from ragbudget.limits import Walls
from ragbudget.pages.cache import held_bytes
from ragbudget.pages.json_trim import (
    Cut,
    CutKind,
    JsonPath,
    dumps,
    get_path,
    replace_path,
    snap_text,
    trim,
)

__all__ = [
    "Page",
    "Remainder",
    "Segment",
    "find_more_call",
    "first_page",
    "first_text_page",
    "join_pages",
    "more_call",
]

PAYLOAD_KEY: dict[CutKind, str] = {"items": "items", "chars": "text", "keys": "entries"}
"""The key of a JSON page that holds its part of the result, by kind of cut."""

UNIT_NAMES: dict[CutKind, str] = {"items": "items", "chars": "characters", "keys": "keys"}

SEGMENTS_ALLOWANCE = 4_096
"""Bytes charged for a remainder's own objects (its segments, its lock) over its result."""


@dataclass
class Segment:
    """One cut: units `start` to `total` of the value at `path` are still to be shown
    (`path` None: the whole result is a text and pages are raw text)."""

    path: JsonPath | None
    kind: CutKind
    start: int
    total: int

    @property
    def left(self) -> int:
        return self.total - self.start


@dataclass(frozen=True)
class Page:
    """One continuation page: its text, and the offset of the next page (None: the last)."""

    body: str
    first: int
    last: int
    next_offset: int | None
    segment: Segment


def _fits(counter: TokenCounter, text: str, budget: int) -> bool:
    # No token is longer than 64 characters: longer texts are over without counting them all.
    return len(text) <= (budget + 1) * 64 and count_up_to(counter, text, budget) <= budget


def first_text_page(text: str, start: int, budget: int, counter: TokenCounter) -> int:
    """Where a page of `text` from character `start` ends: after the last whole line that
    fits `budget` tokens, or, when the first line alone is over, at a boundary inside it.

    The rest of the text is counted whole only when a prefix of it does not already show it
    over; the page's end is then found among the line ends within reach (no token is longer
    than 64 characters) by `largest_cut`: a few counts of about a page each."""
    rest = text[start : start + (budget + 1) * 64 + 1]
    if len(text) - start <= (budget + 1) * 64 and whole_fits(text[start:], budget, counter):
        return len(text)
    ends = [m.end() for m in _NEWLINE.finditer(rest)]
    fitted = largest_cut(rest, ends, budget, counter) if ends else None
    if fitted is None:  # a lone line over the budget: cut inside it, at a boundary
        newline = text.find("\n", start)
        line = text[start:] if newline < 0 else text[start : newline + 1]
        cut = cut_text(line, budget, counter)  # its position, not its text
        return start + max(1, cut.size if cut is not None else 0)
    return start + fitted.size


_NEWLINE = re.compile("\n")


def first_page(
    text: str,
    budget: int,
    counter: TokenCounter,
    *,
    value: Any = None,
    size: Callable[[str, int], int] | None = None,
    walls: Walls | None = None,
    tool: str = "",
) -> tuple[str, Remainder]:
    """The largest first page of `text` within `budget` units, and the `Remainder` whose
    pages (`Remainder.page`) serve the rest.

    With `value`, the JSON list or object `text` holds (`parse_json(text)`), the page is that
    value shortened (`trim`: trailing list items and string characters at any depth, keys as a
    last resort), rendered as compact JSON that still parses and keeps its shape. Otherwise,
    or when not even the smallest shape of the JSON fits, the page is `text` cut after its
    last whole line that fits (a lone longer line at a boundary inside it). A result within
    `budget` is the whole page, with a remainder of 0 units left.

    Args:
        text: the result as the reader would get it whole.
        budget: the most units the page may count (tokens, or a `WalledCounter`'s units).
        counter: counts the units.
        value: the JSON value of `text`, to cut as JSON; None: cut as text.
        size: `size(candidate, budget)` measures a candidate (its units, or anything over
            `budget` when over); by default `counter`, counted no further than needed.
        walls: the walls of every later page, kept with the remainder; `Walls(budget)` by
            default.
        tool: the tool whose result this is, kept with the remainder.

    Use:
        ```python
        from ragbudget import get_counter
        from ragbudget.pages import first_page, join_pages

        counter = get_counter("exact")
        text = "\\n".join(f"line {i}" for i in range(10_000))
        shown, rest = first_page(text, 500, counter)
        pages, offset = [], 0 if rest.left else None
        while offset is not None:
            page = rest.page(offset, 500, counter)
            pages.append(page.body)
            offset = page.next_offset
        assert join_pages(shown, pages) == text
        ```
    """
    walls = walls if walls is not None else Walls(budget)
    if value is not None:
        share = min(1.0, budget * 3 / max(1, len(text)))  # ~3 characters a token

        def fits(candidate: Any) -> bool:
            rendered = dumps(candidate)
            if size is None:
                return _fits(counter, rendered, budget)
            return size(rendered, budget) <= budget

        shown, cuts, fitted = trim(value, fits, share=share)
        if fitted:
            return dumps(shown), Remainder.from_cuts(value, cuts, walls=walls, tool=tool)
    end = first_text_page(text, 0, budget, counter)
    remainder = Remainder(text, [Segment(None, "chars", end, len(text))], walls=walls, tool=tool)
    return text[:end], remainder


class Remainder:
    """A cut result, kept in the page cache, and the segments still to be shown; its pages
    stay within `walls`, those of the call that was cut."""

    def __init__(self, root: Any, segments: Iterable[Segment], *, walls: Walls, tool: str) -> None:
        self.root = root
        self.segments = list(segments)
        self.walls = walls
        self.tool = tool
        self._lock = threading.Lock()

    @classmethod
    def from_cuts(cls, root: Any, cuts: Iterable[Cut], *, walls: Walls, tool: str) -> Remainder:
        segments = (Segment(c.path, c.kind, c.kept, c.total) for c in cuts)
        return cls(root, segments, walls=walls, tool=tool)

    @property
    def max_tokens(self) -> int:
        """The token wall (budget units) of every page."""
        return self.walls.tokens

    def to_dict(self) -> dict[str, Any]:
        """This remainder as plain JSON values (a checkpointer stores them): `root`, `segments`
        (`[path or None, kind, start, total]` each), `walls` and `tool`; `from_dict` reads it."""
        segments = [
            [None if s.path is None else list(s.path), s.kind, s.start, s.total]
            for s in self.segments
        ]
        walls = asdict(self.walls)
        return {"root": self.root, "segments": segments, "walls": walls, "tool": self.tool}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Remainder:
        """The remainder `to_dict` gave `data` for; pages continue where that one stood."""
        segments = (
            Segment(None if path is None else tuple(path), kind, start, total)
            for path, kind, start, total in data["segments"]
        )
        return cls(data["root"], segments, walls=Walls(**data["walls"]), tool=data["tool"])

    def held_bytes(self, limit: int | None = None) -> int:
        """The memory this remainder holds (its result, as parsed), measured object by object;
        counting stops once past `limit`."""
        return held_bytes(self.root, limit) + SEGMENTS_ALLOWANCE

    @property
    def left(self) -> int:
        """Units not yet shown by the first page (the offsets run from 0 to this minus 1)."""
        return sum(segment.left for segment in self.segments)

    def _locate(self, offset: int) -> tuple[int, Segment, int]:
        base = 0
        for segment in self.segments:
            if offset < base + segment.left:
                return base, segment, segment.start + offset - base
            base += segment.left
        msg = f"offset {offset:,} is past the end: this result has offsets 0 to {base - 1:,}"
        raise ValueError(msg)

    def page(self, offset: int, budget: int, counter: TokenCounter) -> Page:
        """The page at `offset` whose body counts at most `budget` tokens."""
        with self._lock:
            base, segment, unit = self._locate(offset)
            if segment.path is None:
                end = first_text_page(self.root, unit, budget, counter)
                body = self.root[unit:end]
            else:
                body, end = self._json_page(segment, unit, budget, counter)
            following = base + end - segment.start
            next_offset = following if following < self.left else None
            return Page(body, unit, end, next_offset, segment)

    def _json_page(
        self, segment: Segment, unit: int, budget: int, counter: TokenCounter
    ) -> tuple[str, int]:
        path = segment.path if segment.path is not None else ()
        source = get_path(self.root, path)
        key = PAYLOAD_KEY[segment.kind]

        def render(part: Any) -> str:
            return dumps({"path": list(path), "start": unit, key: part})

        def part(n: int) -> Any:
            if segment.kind == "keys":
                return dict(list(source.items())[unit : unit + n])
            return source[unit : unit + n]

        left = segment.total - unit
        guess = max(1, min(left, budget * 2 // max(1, len(dumps(part(1))) // 3 + 1)))
        n = (
            largest_fitting(lambda k: _fits(counter, render(part(k)), budget), left, guess=guess)
            or 0
        )
        if segment.kind == "chars" and 0 < n < left:
            n = max(1, snap_text(source[unit:], n))
        if n or segment.kind == "chars":
            n = max(n, 1)
            return render(part(n)), unit + n
        # One item (or one key's value) alone is over the budget: show it trimmed, and serve
        # what its trimming left out from new segments at the end.
        single = part(1)
        name: str | int = next(iter(single)) if segment.kind == "keys" else unit
        where: tuple[str | int] = (name,) if segment.kind == "keys" else (0,)

        def fits(value: Any) -> bool:
            return _fits(counter, render(replace_path(single, where, value)), budget)

        value, cuts, _ = trim(get_path(single, where), fits)
        for cut in cuts:
            self.segments.append(Segment((*path, name, *cut.path), cut.kind, cut.kept, cut.total))
        return render(replace_path(single, where, value)), unit + 1


def join_pages(first: Any, pages: Iterable[Any]) -> Any:
    """A whole result from its first page and its continuation pages, in order.

    For a text result pass the texts; for a JSON result the parsed values (the first page's
    value, then each page's `{"path", "start", ...}` object). A page that does not continue
    where the result stands is a ValueError.
    """
    result = first
    for page in pages:
        if isinstance(result, str) and isinstance(page, str):
            result += page
            continue
        if not isinstance(page, dict) or "path" not in page or "start" not in page:
            msg = f"not a continuation page: {json.dumps(page)[:80]}"
            raise ValueError(msg)
        path, start = tuple(page["path"]), page["start"]
        target = get_path(result, path)
        if len(target) != start:
            msg = f"page for {list(path)} starts at {start}, but {len(target)} units are there"
            raise ValueError(msg)
        if "items" in page:
            merged: Any = [*target, *page["items"]]
        elif "text" in page:
            merged = target + page["text"]
        else:
            merged = {**target, **page["entries"]}
        result = replace_path(result, path, merged)
    return result


def more_call(tool: str, handle: str, offset: int) -> str:
    """The call a continuation notice names: `more(handle="6GJmNcVeHKEd", offset=120)`."""
    return f'{tool}(handle="{handle}", offset={offset})'


def find_more_call(text: str, tool: str = "more") -> tuple[str, int] | None:
    """The handle and offset of the first `more_call` of `tool` in `text`, or None: what a
    client follows to read the next page."""
    found = re.search(re.escape(tool) + r'\(handle="([^"]+)", offset=(\d+)\)', text)
    return None if found is None else (found[1], int(found[2]))
