"""One copy: what a `search` or `read_document` answer holds, fitted whole within the walls.

A client gets text blocks and structured content, and clients differ on which they show the
model (some both). So the structured content does not repeat the results' texts: it carries
what a program needs (ids, sources, lines, scores, token counts, truncation, continuation, the
walls and which one bound; fields that are None are left out, as the schema allows). The text
blocks plus the structured content serialized as compact JSON (as the wire and
`JSON.stringify` write it) stay within every wall of the client's profile together: tokens by
the server's counter, characters, UTF-8 bytes (`ragbudget.limits.WalledCounter`).

`fit_answer` runs the store call, measures all of it, and runs it again with the excess taken
off the store's budget until the whole fits (twice, most of the time).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field
from ragbudget.counters import TokenCounter
from ragbudget.limits import ClientProfile, Wall, WalledCounter, Walls

from ragbudget_server.mcp.budgeting import BudgetExceededError, checked_text
from ragbudget_server.store import ReadResponse, SearchResponse, StoreError
from ragbudget_server.store.models import Format, accounted_ids
from ragbudget_server.store.selection import Remembered

__all__ = [
    "Budget",
    "FittedAnswer",
    "ReadAnswer",
    "ResultRef",
    "SearchAnswer",
    "fit_answer",
    "serialized",
]

R = TypeVar("R", SearchResponse, ReadResponse)

_TRIES = 6
"""Store calls one answer may take (the first guess, then the excess taken off)."""

_WALL_WORDS: dict[Wall, str] = {"tokens": "token", "chars": "character", "bytes": "byte"}


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class WallsInfo(_Model):
    """The walls one answer was fitted to."""

    tokens: int = Field(description="Most tokens, by `counter`.")
    chars: int | None = Field(default=None, description="Most characters (UTF-16 units).")
    bytes: int | None = Field(default=None, description="Most UTF-8 bytes.")


class Budget(_Model):
    """How the answer was fitted: the client profile, its walls, and which one bound."""

    profile: str = Field(description="The client profile in force (see `stats`).")
    walls: WallsInfo = Field(description="The walls the whole answer stays within.")
    bound: Wall | None = Field(
        default=None,
        description="The wall the answer stopped at when something was left out; else None.",
    )
    max_tokens: int = Field(description="The token budget in force (the ask, clamped).")
    requested_max_tokens: int = Field(description="The max_tokens asked for.")
    clamped: bool = Field(description="True when the ask was above the profile's token wall.")
    counter: str = Field(description="The counter the token wall is measured with.")
    text_tokens: int = Field(description="Tokens of the text blocks, by `counter`.")
    text_chars: int = Field(description="Characters of the text blocks (UTF-16 units).")
    text_bytes: int = Field(description="UTF-8 bytes of the text blocks.")


class ResultRef(_Model):
    """One result as a program needs it; its text is in the answer's text block."""

    id: str = Field(description="Stable chunk id.")
    source: str = Field(description="The document's path, as stored (for `read_document`).")
    start_line: int = Field(description="First line shown, 1-based.")
    end_line: int = Field(description="Last line shown, 1-based inclusive.")
    pages: str | None = Field(
        default=None, description="The pages (or slides) those lines lie on, for documents."
    )
    score: float | None = Field(default=None, description="Similarity (None when concise).")
    tokens: int | None = Field(default=None, description="Tokens of the result's text.")
    cut: bool | None = Field(default=None, description="True when its text was cut to fit.")
    merged_ids: list[str] | None = Field(default=None, description="Chunks merged into it.")
    duplicate_ids: list[str] | None = Field(default=None, description="Duplicates left out for it.")


class SearchAnswer(_Model):
    """`search`'s structured content: the page's results without their texts."""

    results: list[ResultRef] = Field(description="Results in rank order, as the text shows them.")
    total_count: int = Field(description="Chunks matching the filters.")
    offset: int = Field(description="Rank (0-based) of this page's first result.")
    next_offset: int | None = Field(
        default=None, description="The offset that continues; None (left out) at the end."
    )
    truncated: bool = Field(description="True when the walls left results out or cut one.")
    capped_ids: list[str] | None = Field(
        default=None, description="Ids left out by the cap per file."
    )
    next_cursor: str | None = Field(
        default=None,
        description="Pass as `cursor` (same query and filters) to continue this ranking; it "
        "lasts an hour. None (left out) at the ranking's end.",
    )
    store_changed: bool | None = Field(
        default=None, description="True when the store changed since the cursor's first page."
    )
    gone_ids: list[str] | None = Field(
        default=None, description="Ids of the cursor's ranking reached here and no longer stored."
    )
    format: Format = Field(description="How the text block renders the results.")
    budget: Budget = Field(description="The profile, walls and sizes of this answer.")

    def accounted_ids(self) -> list[str]:
        """Every ranked id this page accounts for (`SearchResponse.accounted_ids`)."""
        return accounted_ids(self.results, self.capped_ids) + list(self.gone_ids or ())


class ReadAnswer(_Model):
    """`read_document`'s structured content: where the page is, without its lines."""

    source: str = Field(description="The document's path, as stored.")
    start_line: int | None = Field(default=None, description="First line shown, 1-based.")
    end_line: int | None = Field(default=None, description="Last line shown, 1-based.")
    pages: str | None = Field(
        default=None, description="The pages (or slides) the lines shown lie on, for documents."
    )
    total_lines: int = Field(description="Lines in the whole document.")
    next_offset: int | None = Field(
        default=None, description="The offset that continues; None (left out) at the end."
    )
    next_char_offset: int | None = Field(
        default=None,
        description="Set when line `next_offset` is only partly shown: pass it as char_offset.",
    )
    truncated: bool = Field(description="True when lines (or part of a line) were left out.")
    format: Format = Field(description="How the text block renders the page.")
    budget: Budget = Field(description="The profile, walls and sizes of this answer.")


def serialized(data: dict[str, Any]) -> str:
    """Structured content as the wire carries it (compact JSON, as `JSON.stringify` writes)."""
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


def _lean(response: SearchResponse | ReadResponse, budget: Budget) -> SearchAnswer | ReadAnswer:
    if isinstance(response, SearchResponse):
        return SearchAnswer(
            results=[ResultRef(**r.model_dump(exclude={"text"})) for r in response.results],
            total_count=response.total_count,
            offset=response.offset,
            next_offset=response.next_offset,
            truncated=response.truncated,
            capped_ids=response.capped_ids,
            next_cursor=response.next_cursor,
            store_changed=response.store_changed,
            gone_ids=response.gone_ids,
            format=response.format,
            budget=budget,
        )
    return ReadAnswer(
        **response.model_dump(
            include={
                "source", "start_line", "end_line", "pages", "total_lines", "next_offset",
                "next_char_offset", "truncated", "format",
            }
        ),
        budget=budget,
    )  # fmt: skip


@dataclass(frozen=True)
class FittedAnswer:
    """What goes to the client: the text blocks, the structured content, their units."""

    blocks: list[str]
    structured: dict[str, Any]
    units: int
    """Budget units of the blocks and the serialized structured content together."""
    text_units: int
    """Of the blocks alone (what the server's guard counts)."""


@dataclass(frozen=True)
class Ask:
    """One call's budget: the profile, its walls in the counter's tokens, the ask."""

    profile: ClientProfile
    walls: Walls
    requested: int
    counter: TokenCounter
    results: int = 0
    """The most results the answer may list (a search's `limit`): its structured content
    lists each, so the first guess leaves room for them."""


def _notice(ask: Ask, bound: Wall | None) -> str | None:
    """The server's line above the store's text: the clamp, and the wall a cut stopped at."""
    clamped = ask.requested > ask.walls.tokens
    if not clamped and bound is None:
        return None
    parts = [f"[Client profile {ask.profile.name}: answers stop at {ask.walls.describe()}"]
    if clamped:
        parts.append(f"max_tokens={ask.requested:,} clamped to {ask.walls.tokens:,} tokens")
    if bound is not None:
        parts.append(f"this one stopped at the {_WALL_WORDS[bound]} wall")
    return "; ".join(parts) + "]"


_OVERHEAD = 120
"""A first guess at the units of the structured content's fields beside the text."""

_PER_RESULT = 70
"""A first guess at the units of one result's entry in the structured content (id, source,
lines, score, tokens, merged ids: 70-85 measured on the standard library's paths)."""

_RESULT_UNITS = 450
"""A first guess at the units of one result in the text, to guess how many a budget shows."""


def fit_answer(ask: Ask, fetch: Callable[[int, TokenCounter], R]) -> FittedAnswer:
    """The store's answer within `ask.walls`, text blocks and structured content together.

    `fetch(budget, counter)` runs the store call with a budget in units of `counter` (a
    `WalledCounter`, so the store stops at whichever wall comes first). The answer is measured
    whole; over the walls, the store runs again with the excess off its budget.

    Raises:
        BudgetExceededError: the walls cannot hold even the smallest answer (too small a wall;
            the store's own error says what it needs when its part alone cannot fit).
    """
    walled = WalledCounter(Remembered(ask.counter), ask.walls)  # each text counted once
    limit = ask.walls.tokens
    # A first guess: the server's notice and the structured content's fields (~120 units, and
    # ~70 a result for as many results as the budget may show), so that one store call is
    # usually enough; the store gets at least 1, and says what it needs when that is too little.
    budget = max(1, limit - walled.count(_notice(ask, "chars") or "") - _OVERHEAD)
    budget = max(1, budget - _PER_RESULT * min(ask.results, budget // _RESULT_UNITS))
    floor: int | None = None  # the smallest budget the store's text can take, once it said
    overhead = 0
    for attempt in range(_TRIES):
        try:
            response = fetch(budget, walled)
        except StoreError as exc:
            needed = _needed(exc)
            if needed is None or needed <= budget:
                raise
            # The store's least budget (it can grow by a token or two from one ask to the
            # next: its notice names the budget). Within the walls, ask again with it.
            floor = budget = needed
            if needed < limit:
                continue
            try:  # the smallest answer, to say what it needs whole
                response = fetch(budget, walled)
            except StoreError as again:
                floor = max(floor, _needed(again) or floor)
                overhead = overhead or _OVERHEAD
                break
        text, used = checked_text(response, budget, walled)
        bound = walled.bound(text) if response.truncated else None
        notice = _notice(ask, bound)
        blocks = [text] if notice is None else [notice, text]
        size = walled.measure("\n".join(blocks))
        info = Budget(
            profile=ask.profile.name,
            walls=WallsInfo(tokens=limit, chars=ask.walls.chars, bytes=ask.walls.bytes),
            bound=bound,
            max_tokens=min(ask.requested, limit),
            requested_max_tokens=ask.requested,
            clamped=ask.requested > limit,
            counter=ask.counter.name,
            text_tokens=sum(walled.inner.count(b) for b in blocks),
            text_chars=size.chars - len(blocks) + 1,
            text_bytes=size.bytes - len(blocks) + 1,
        )
        structured = _lean(response, info).model_dump(mode="json", exclude_none=True)
        text_units = used + (walled.count(notice) if notice is not None else 0)
        units = text_units + walled.count(serialized(structured))
        if units <= limit:
            return FittedAnswer(blocks, structured, units, text_units)
        overhead = units - used
        smallest = 1 if floor is None else floor
        if budget <= smallest:
            break
        # The text must shrink, and the structured content shrinks with its results: first by
        # the share the whole is over (a page of 100 results over by 10% keeps about 90 of
        # them), the last tries by the whole excess, so that it ends.
        over = units - limit
        if attempt < _TRIES - 2:
            over = -(-min(budget, used) * over // units)
        budget = max(smallest, min(budget, used) - over)
    least = (floor or 1) + overhead
    msg = (
        f"max_tokens={limit} cannot hold even the smallest answer here with its structured "
        f"content (client profile {ask.profile.name}: {ask.walls.describe()}), which needs "
        f"{least} tokens; use max_tokens >= {least}"
    )
    raise BudgetExceededError(msg)


_NEEDED = re.compile(r"use max_tokens >= (\d+)")


def _needed(exc: StoreError) -> int | None:
    """The least budget a store error says its text needs, if it says one."""
    found = _NEEDED.search(str(exc))
    return None if found is None else int(found[1])
