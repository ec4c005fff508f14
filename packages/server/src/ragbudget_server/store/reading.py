"""Reading a stored document back by lines, within a token budget for the rendered response."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ragbudget.counters import TokenCounter
from ragbudget.fitting import cut_text, largest_prefix, least_budget
from ragbudget.truncate import split_lines

from ragbudget_server.store.errors import BudgetTooSmall, StoreError
from ragbudget_server.store.models import ReadResponse
from ragbudget_server.store.search import TEXT, Rendering, measure

__all__ = ["budget_read", "rebuild_text"]


def rebuild_text(records: Sequence[tuple[str, dict[str, Any]]]) -> str:
    """A document's exact text from its chunks (documents and metadata), overlaps removed."""
    ordered = sorted(records, key=lambda r: (int(r[1]["start_index"]), int(r[1]["chunk_index"])))
    parts: list[str] = []
    covered = 0
    for document, meta in ordered:
        start, end = int(meta["start_index"]), int(meta["end_index"])
        lead = meta.get("lead")
        if isinstance(lead, str):
            parts.append(lead)
        parts.append(document[covered - start :] if start < covered else document)
        covered = max(covered, end)
        tail = meta.get("tail")
        if isinstance(tail, str):
            parts.append(tail)
    return "".join(parts)


def budget_read(
    source: str,
    text: str,
    *,
    offset: int,
    limit: int | None,
    max_tokens: int,
    counter: TokenCounter,
    char_offset: int = 0,
    rendering: Rendering = TEXT,
    pages: Callable[[int, int], str | None] | None = None,
) -> ReadResponse:
    """Lines of `text` from `offset`, at most `limit` of them, rendered within `max_tokens`.

    The page is the largest run of whole lines whose rendered response fits (the budget
    primitive counts the response as rendered, escaping and notice included). A line alone
    over the budget is shown in parts: each part's notice gives the `offset` (that line) and
    `char_offset` (where the next part starts) to continue with. `pages(start, end)` names
    the pages lines `start` to `end` lie on (a PDF's), said in the header.
    """
    lines = split_lines(text)
    total = len(lines)
    if offset > max(total, 1):
        msg = f"offset {offset} is past the end: {source} has {total:,} lines"
        raise StoreError(msg)
    rest = lines[offset - 1 :]
    line = rest[0] if rest else ""
    if not 0 <= char_offset < max(len(line), 1):
        msg = (
            f"char_offset {char_offset} is past the end of line {offset}, which has "
            f"{len(line):,} characters"
        )
        raise StoreError(msg)
    k_max = len(rest) if limit is None else min(limit, len(rest))
    frame: dict[str, Any] = {
        "max_tokens": rendering.stated(max_tokens), "counter": counter.name,
        "format": rendering.format,
        "pages": pages,
    }  # fmt: skip

    def page(k: int, budget: int = max_tokens) -> ReadResponse:
        end = offset + k - 1
        truncated = k < len(rest)
        notice = None
        if truncated:
            by_budget = "" if k == limit else f" ({rendering.stated(budget):,}-token budget)"
            if k == 0:
                notice = f"[Line {offset} does not fit the budget{by_budget}; raise max_tokens]"
            else:
                notice = (
                    f"[Showing lines {offset}-{end} of {total:,}{by_budget}"
                    f"{rendering.more(end + 1)}]"
                )
        shown = "\n".join(rest[:k])
        frame_here = {**frame, "max_tokens": rendering.stated(budget)}
        return _response(source, shown, offset, k, total, truncated, notice, frame_here)

    def part(kept: str) -> ReadResponse:
        """Characters `char_offset` to `char_offset + len(kept)` of the line at `offset`."""
        stop = char_offset + len(kept)
        where = f"characters {char_offset:,}-{stop:,}"
        next_char = None
        if stop < len(line):
            next_char = stop
            notice = (
                f"[Line {offset} alone is over the budget "
                f"({rendering.stated(max_tokens):,}-token budget); "
                f"showing {where} of {len(line):,}{rendering.more_in_line(offset, stop)}]"
            )
        else:
            more = rendering.more(offset + 1) if offset < total else ""
            notice = f"[Showing the end of line {offset} ({where}){more}]"
        response = _response(source, kept, offset, 1, total, True, notice, frame)
        if next_char is None:
            return response
        return response.model_copy(update={"next_offset": offset, "next_char_offset": next_char})

    shell = page(0)
    floor = counter.count(shell.to_text())
    if floor > max_tokens:
        floor = least_budget(floor, lambda m: counter.count(page(0, m).to_text()))
        raise BudgetTooSmall(max_tokens, f"an empty read of {source}", floor)
    if k_max == 0:
        return measure(shell, counter)
    if char_offset == 0:
        fitted = largest_prefix(
            lambda k: page(k).to_text(), k_max, max_tokens, counter, lower=1,
            guess=_guess_lines(rest[:k_max], max_tokens),
        )  # fmt: skip
        if fitted is not None:
            return measure(page(fitted.size), counter, fitted)
    # A line alone over the budget, or the rest of one: the longest part (at a word where one
    # is near) whose response fits.
    tail = line[char_offset:]
    cut = cut_text(tail, max_tokens, counter, render=lambda kept: part(kept).to_text())
    if cut is None or cut.size == 0:
        return measure(shell, counter)
    return measure(part(tail[: cut.size]), counter, cut)


def _response(
    source: str,
    text: str,
    offset: int,
    k: int,
    total: int,
    truncated: bool,
    notice: str | None,
    frame: dict[str, Any],
) -> ReadResponse:
    end = offset + k - 1
    pages = frame.get("pages")
    return ReadResponse(
        **{key: value for key, value in frame.items() if key != "pages"},
        pages=pages(offset, end) if pages is not None and k else None,
        used_tokens=frame["max_tokens"],  # the widest value, until `measure` sets it
        source=source,
        text=text,
        start_line=offset if k else None,
        end_line=end if k else None,
        total_lines=total,
        next_offset=end + 1 if k and end < total else None,
        truncated=truncated,
        notice=notice,
    )


def _guess_lines(lines: list[str], max_tokens: int) -> int:
    """How many lines a budget may hold, from their lengths (about 3 characters a token as
    escaped in JSON): where the search starts, never what it returns."""
    room = 3 * max_tokens
    for k, line in enumerate(lines):
        room -= len(line) + 2
        if room < 0:
            return max(k, 1)
    return len(lines)
