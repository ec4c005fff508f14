"""Reading a stored document back by lines, within a token budget for the rendered response."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ragbudget.counters import TokenCounter
from ragbudget.store.errors import StoreError, least_budget
from ragbudget.store.models import ReadResponse
from ragbudget.truncate import TextTruncation, truncate_head

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


def _line_count(text: str) -> int:
    if not text:
        return 0
    return text.count("\n") + (0 if text.endswith("\n") else 1)


def budget_read(
    source: str,
    text: str,
    *,
    offset: int,
    limit: int | None,
    max_tokens: int,
    counter: TokenCounter,
    char_offset: int = 0,
) -> ReadResponse:
    """Lines of `text` from `offset`, at most `limit` of them, rendered within `max_tokens`.

    A line alone over the budget is shown in parts: each part's notice gives the `offset` (that
    line) and `char_offset` (where the next part starts) to continue with.
    """
    total = _line_count(text)
    if offset > max(total, 1):
        msg = f"offset {offset} is past the end: {source} has {total:,} lines"
        raise StoreError(msg)
    max_lines = limit if limit is not None else max(total - offset + 1, 1)
    part = _Part(text, offset, char_offset, total) if char_offset else None
    if part is not None:  # the rest of one line, read as a text of its own
        text, max_lines = part.rest, 1

    def respond(t: TextTruncation, limit: int = max_tokens) -> ReadResponse:
        if part is not None or t.partial_line:
            return (part or _Part(text, offset, 0, total)).respond(source, t, limit)
        notice = None
        if t.truncated:
            budget = "" if t.truncated_by == "lines" else f" ({limit:,}-token budget)"
            more = f". Use offset={t.next_offset} to continue" if t.next_offset else ""
            if t.partial_line:
                line = t.start_line
                notice = f"[Line {line} alone is over the budget{budget}; showing its start{more}]"
            elif t.output_lines == 0:
                notice = f"[Line {offset} does not fit the budget{budget}; raise max_tokens]"
            else:
                notice = f"[Showing lines {t.start_line}-{t.end_line} of {total:,}{budget}{more}]"
        return ReadResponse(
            source=source,
            text=t.text,
            start_line=t.start_line,
            end_line=t.end_line,
            total_lines=total,
            next_offset=t.next_offset,
            truncated=t.truncated,
            notice=notice,
        )

    # What is returned when not even part of a line fits.
    nothing = TextTruncation(
        text="", truncated=True, truncated_by="tokens", output_lines=0, total_lines=total
    )
    shell = respond(nothing)
    floor = counter.count(shell.to_text())
    if floor > max_tokens:
        floor = least_budget(floor, lambda m: counter.count(respond(nothing, m).to_text()))
        msg = (
            f"max_tokens={max_tokens} cannot hold even an empty read of {source}, which needs "
            f"{floor} tokens; use max_tokens >= {floor}"
        )
        raise StoreError(msg)
    # The text's own limit: the budget less the envelope, corrected by what JSON escaping
    # adds until the rendered response fits (a few rounds at most).
    room = max_tokens - floor + counter.count(shell.notice or "")
    for _ in range(16):
        if room < 1:
            break
        cut = truncate_head(
            text,
            max_lines=max_lines,
            max_tokens=room,
            offset=1 if part is not None else offset,
            counter=counter,
        )
        if not cut.text and cut.truncated:
            break
        response = respond(cut)
        size = counter.count(response.to_text())
        if size <= max_tokens:
            return response
        room -= max(size - max_tokens, room // 16, 1)
    return shell


class _Part:
    """Line `number` shown from character `start`: the continuation stays inside the line."""

    def __init__(self, text: str, number: int, start: int, total: int) -> None:
        self.line = text.split("\n")[number - 1] if text else ""
        if not 0 <= start < max(len(self.line), 1):
            msg = (
                f"char_offset {start} is past the end of line {number}, which has "
                f"{len(self.line):,} characters"
            )
            raise StoreError(msg)
        self.number, self.start, self.total = number, start, total
        self.rest = self.line[start:]

    def respond(self, source: str, t: TextTruncation, limit: int) -> ReadResponse:
        """The response for `t`, a cut of this line from `start` (a prefix of the rest)."""
        shown = t.text if self.rest.startswith(t.text) else ""
        end = self.start + len(shown)
        budget = f" ({limit:,}-token budget)"
        number, size = self.number, len(self.line)
        next_offset, next_char = None, None
        if not shown:
            notice = f"[Line {number} does not fit the budget{budget}; raise max_tokens]"
        elif end < size:
            next_offset, next_char = number, end
            notice = (
                f"[Line {number} alone is over the budget{budget}; showing characters "
                f"{self.start:,}-{end:,} of {size:,}. Use offset={number}, char_offset={end} "
                "to continue]"
            )
        elif number < self.total:
            next_offset = number + 1
            notice = (
                f"[Showing the end of line {number} (characters {self.start:,}-{end:,}). "
                f"Use offset={number + 1} to continue]"
            )
        else:
            notice = f"[Showing the end of line {number} (characters {self.start:,}-{end:,})]"
        return ReadResponse(
            source=source,
            text=shown,
            start_line=number if shown else None,
            end_line=number if shown else None,
            total_lines=self.total,
            next_offset=next_offset,
            next_char_offset=next_char,
            truncated=bool(next_offset) or not shown or self.start > 0,
            notice=notice,
        )
