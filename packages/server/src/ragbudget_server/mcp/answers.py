"""What a `search` or `read_document` answer holds: one text block, fitted within the walls.

Clients differ on which field of a tool result they give their model: Claude Code, Codex, VS
Code, Cursor and pydantic-ai send `JSON.stringify(structuredContent)` whenever it is present
and drop the text blocks; Gemini CLI and others read only the text; some send both. So these
answers carry **no structured content**: every client's model reads the same one text block
(the passages, the notice, the cursor or offset that continues), and the walls are checked on
exactly that block, under any of the three rules. Programs ask `format="json"` (the whole
response as JSON text) or read `_meta["ragbudget"]`, which no client shows its model: the
page's ids, sources, lines, scores, continuation and the walls (`SearchAnswer`, `ReadAnswer`).

`fit_answer` runs the store call with the caller's budget (less the server's one line, when
there is one: the clamp of an ask above the client's wall, or a character or byte wall that
stopped the answer before its token budget) and measures the block the client gets. The store
budgets its own rendering and reports the count it measured (`SearchResponse.measured()`);
`checked_text` is the server's one check of that count against the call's budget, before
sending and without counting again: an answer over it is an error (`BudgetExceededError`,
logged at ERROR), never sent.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from pydantic import BaseModel, ConfigDict, Field
from ragbudget.counters import TokenCounter
from ragbudget.errors import RagbudgetError
from ragbudget.limits import ClientProfile, Wall, WalledCounter, Walls
from ragbudget.text import counted

from ragbudget_server.store import ReadResponse, SearchResponse
from ragbudget_server.store.models import Format, accounted_ids
from ragbudget_server.store.selection import Remembered

__all__ = [
    "Budget",
    "BudgetExceededError",
    "FittedAnswer",
    "ReadAnswer",
    "ResultRef",
    "SearchAnswer",
    "checked_text",
    "fit_answer",
    "serialized",
]

logger = logging.getLogger(__name__)

R = TypeVar("R", SearchResponse, ReadResponse)

_TRIES = 3
"""Store calls one answer may take: the first, and one for a server line only a cut shows
(a third when that line's units rounded short)."""

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
    text_tokens: int = Field(description="Tokens of the text block, by `counter`.")
    text_chars: int = Field(description="Characters of the text block (UTF-16 units).")
    text_bytes: int = Field(description="UTF-8 bytes of the text block.")


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
    """`search`'s `_meta["ragbudget"]`: the page's results without their texts."""

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
    """`read_document`'s `_meta["ragbudget"]`: where the page is, without its lines."""

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
    """`data` as compact JSON, as the wire carries it (and `JSON.stringify` writes it)."""
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


class Rendered(Protocol):
    """A store response: what it renders for the model, and what the store measured of it."""

    def to_text(self) -> str: ...

    def measured(self) -> tuple[str, int] | None: ...


class BudgetExceededError(RagbudgetError, ValueError):
    """A response over its budget reached the server's last check: a bug, never sent."""


def checked_text(response: Rendered, budget: int, counter: TokenCounter) -> tuple[str, int]:
    """The text the model will read and its token count, checked against `budget`: the
    server's one check of the store's budget.

    Uses the store's own measure when it has one (counted once, by the same counter), else
    counts `to_text()`. The check cannot fire silently: were the store ever to overshoot, the
    call fails with an error (logged at ERROR) instead of sending an over-budget result. The
    count then goes with the result to the server's `TokenBudgetMiddleware`
    (`ServerState.measured`), which does not count it again.

    Raises:
        BudgetExceededError: the text is over the budget (logged at ERROR: a store bug).
    """
    measured = response.measured()
    if measured is None:
        text = response.to_text()
        measured = (text, counter.count(text))
    text, used = measured
    if used > budget:
        msg = (
            f"the response counts {counted(used, 'token')} by {counter.name}, over its "
            f"{budget:,}-token "
            "budget; it was not sent (please report this as a ragbudget bug)"
        )
        logger.error(msg)
        raise BudgetExceededError(msg)
    return text, used


@dataclass(frozen=True)
class FittedAnswer:
    """What goes to the client: the one text block, its units and tokens, and the page's
    fields for `_meta` (`SearchAnswer` or `ReadAnswer`, as JSON)."""

    text: str
    units: int
    """Budget units of `text` (within every wall when at most the token wall)."""
    tokens: int
    """Tokens of `text` by the call's counter (what the server's guard is told)."""
    page: dict[str, Any]
    bound: Wall | None
    """The wall the answer stopped at when something was left out; else None."""


@dataclass(frozen=True)
class Ask:
    """One call's budget: the profile, its walls in the counter's tokens, the ask."""

    profile: ClientProfile
    walls: Walls
    requested: int
    counter: TokenCounter


def _notice(ask: Ask, bound: Wall | None) -> str | None:
    """The server's one line above the store's text: the clamp of an ask above the client's
    wall, and a character or byte wall that stopped the answer (the token budget the store's
    own notice states)."""
    clamped = ask.requested > ask.walls.tokens
    other_wall = bound is not None and bound != "tokens"
    if not clamped and not other_wall:
        return None
    walls = f"client profile {ask.profile.name}: {ask.walls.describe()}"
    stopped = f"stopped at the {_WALL_WORDS[bound]} wall" if other_wall and bound else ""
    if not clamped:
        return f"[{stopped.capitalize()} of {walls}]"
    head = f"[max_tokens={ask.requested:,} clamped to {ask.walls.tokens:,} tokens ({walls})"
    return head + (f"; this one {stopped}]" if stopped else "]")


def fit_answer(ask: Ask, fetch: Callable[[int, TokenCounter], R]) -> FittedAnswer:
    """The store's answer as one text block within `ask.walls`.

    `fetch(budget, counter)` runs the store call with a budget in units of `counter` (a
    `WalledCounter`, so the store stops at whichever wall comes first). The store's budget is
    the token wall less the server's line when there is one; a line that only a cut shows (a
    character or byte wall bound) takes its units off the next try.

    Raises:
        StoreError: the store's own (a budget below its smallest answer says what it needs).
        BudgetExceededError: the walls cannot hold the server's line and any answer.
    """
    walled = WalledCounter(Remembered(ask.counter), ask.walls)  # each text counted once
    limit = ask.walls.tokens
    head = _notice(ask, None)
    budget = limit - (0 if head is None else walled.count(head + "\n"))
    for _ in range(_TRIES):
        if budget < 1:
            break
        response = fetch(budget, walled)
        text, used = checked_text(response, budget, walled)
        bound = walled.bound(text) if response.truncated else None
        head = _notice(ask, bound)
        whole = text if head is None else f"{head}\n{text}"
        units = used if head is None else walled.count(whole)
        if units <= limit:
            return _fitted(ask, response, whole, units, bound, walled)
        budget = min(budget, used) - (units - limit)  # the store's text less the excess
    msg = (
        f"max_tokens={ask.requested} cannot hold the server's notice and an answer here "
        f"(client profile {ask.profile.name}: {ask.walls.describe()})"
    )
    raise BudgetExceededError(msg)


def _fitted(
    ask: Ask,
    response: SearchResponse | ReadResponse,
    text: str,
    units: int,
    bound: Wall | None,
    walled: WalledCounter,
) -> FittedAnswer:
    size = walled.measure(text)
    limit = ask.walls.tokens
    info = Budget(
        profile=ask.profile.name,
        walls=WallsInfo(tokens=limit, chars=ask.walls.chars, bytes=ask.walls.bytes),
        bound=bound,
        max_tokens=min(ask.requested, limit),
        requested_max_tokens=ask.requested,
        clamped=ask.requested > limit,
        counter=ask.counter.name,
        text_tokens=size.tokens,
        text_chars=size.chars,
        text_bytes=size.bytes,
    )
    page = _lean(response, info).model_dump(mode="json", exclude_none=True)
    return FittedAnswer(text, units, size.tokens, page, bound)
