"""Cutting a result over its walls, and serving the rest page by page (the continuation).

**What a client's model reads.** Clients differ on which field of a tool result they give
their model: Claude Code, Codex, VS Code, Cursor and pydantic-ai send
`JSON.stringify(structuredContent)` whenever it is present and drop the text blocks; Gemini
CLI and others read only the text; some send both. So the walls cover everything a model may
read, under any client's rule: the text blocks (counted one by one and added up), any image,
audio or embedded resource kept (counted on its base64 data or text), and the structured
content as it goes on the wire (`clients.wire_json`). Sizes are budget units of a
`WalledCounter` (tokens, characters and bytes at once), so a result within `walls.tokens` units
is within every wall. A result within them is returned as it is.

**The cut** (`ResultGuard.cut`). A result over them is first made text only (`text_only`):
structured content that mirrors the text (fastmcp renders a list, dict or model return as JSON
text and as the same value, or `{"result": value}`; the reference filesystem server sends
`{"content": text}`) is dropped, other structured content becomes one more JSON text block.
The cut's notice and handle are then in the one field every client forwards (the middleware
lists budgeted tools without their output schema, as fastmcp's own response limiter does).
When only media are then over, those that do not fit are replaced by one note. Otherwise
`TextCut` cuts: the text blocks are joined (a single block that holds a JSON list or object is
shortened as JSON with `ragbudget.pages`, still valid and the same shape, anything else after a
line) and the largest first page that fits is kept, with what was left out handed to the page
cache as a `Remainder`; media are replaced by one note. A notice block at the end says what
was left out, which wall bound, which profile is in force, and which `more(handle=...,
offset=...)` call continues.

**Errors** (`cut_error`). fastmcp turns an exception a tool raises (a `ToolError`, a
validation error, or any other, as its masking allows) into an error result whose one text
block is the exception's message. An error over the walls is cut as a text result would be,
and the blocks are joined into the one message the client gets; it stays an error.

**The continuation tool** (`make_more_tool`, `serve_page`): `more(handle, offset)` serves the
pages a cut result left out. Its description states how long a handle lives (the page cache's
TTL since last use, as MCP 2026-07-28 asks of tools that hand out handles); an unknown or
expired handle is a tool error that says to call the original tool again. A server's own tool
with the same name is never silently replaced: the middleware refuses to list or call tools
until the continuation tool is given a free name (`ContinuationNameTaken`).

A first page and a continuation page are each fitted with their notice by one loop,
`fit_with_notice`: a notice's size depends on the page it describes.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Annotated, Any, TypeVar

import anyio.to_thread
from fastmcp import FastMCP
from fastmcp.exceptions import ToolError
from fastmcp.server.providers import Provider
from fastmcp.tools import Tool, ToolResult
from mcp.shared.exceptions import MCPError
from mcp_types import (
    INTERNAL_ERROR,
    AudioContent,
    ContentBlock,
    EmbeddedResource,
    ImageContent,
    TextContent,
    ToolAnnotations,
)
from pydantic import Field

from ragbudget.counters import TokenCounter, count_up_to
from ragbudget.limits import Wall, WalledCounter, Walls
from ragbudget.middleware.clients import visible_text, wire_json
from ragbudget.pages import Cut, Remainder, Segment, first_page, parse_json
from ragbudget.pages.cache import PageCache, describe_ttl
from ragbudget.pages.json_trim import path_label
from ragbudget.pages.remainder import UNIT_NAMES, Page, more_call

__all__ = [
    "META_KEY",
    "RETRIES",
    "ContinuationNameTaken",
    "GuardOutcome",
    "ResultGuard",
    "TextCut",
    "check_name_free",
    "cut_error",
    "fit_with_notice",
    "make_more_tool",
    "rebuild",
    "serve_page",
    "text_only",
]

logger = logging.getLogger(__name__)

T = TypeVar("T")

META_KEY = "ragbudget_cut"
"""Key of the cut's figures in a cut result's `_meta`."""

RETRIES = 6
"""Attempts at a body and notice within the budget (a notice's size depends on the body)."""

MEMO_CHARS = 10_000
"""Texts at least this long have their sizes remembered by the guard that measured them."""

WALL_WORDS: dict[Wall, str] = {"tokens": "tokens", "chars": "characters", "bytes": "bytes"}

SEPARATOR = "\n\n"
"""Between the kept part of an error message and its notice."""


# What a cut yields ------------------------------------------------------------------------


@dataclass
class GuardOutcome:
    """A cut result and what to report about it."""

    result: ToolResult
    summary: str
    problems: list[str] = field(default_factory=list)
    """What the server's author should fix (logged at WARNING)."""


def rebuild(
    result: ToolResult,
    content: list[ContentBlock],
    structured: dict[str, Any] | None,
    figures: dict[str, Any] | None = None,
) -> ToolResult:
    """A new result like `result` with other blocks and structured content (and cut figures)."""
    meta = result.meta if figures is None else {**(result.meta or {}), META_KEY: figures}
    return ToolResult(
        content=content, structured_content=structured, meta=meta, is_error=result.is_error
    )


def fit_with_notice(
    budget: int, reserve: int, attempt_at: Callable[[int], tuple[T, int, int]]
) -> tuple[T, bool]:
    """The largest page that fits `budget` units with its notice: `attempt_at(room)` makes a
    page within `room` units and its notice, and returns them with the units both use and the
    notice's alone; the room is `budget` less a reserve for the notice (`reserve` at first),
    corrected after each try that was over. Returns the last try and whether it fits (after
    `RETRIES` tries, only a counter that is far from additive gets no fit)."""
    for attempt in range(RETRIES):
        made, used, notice_units = attempt_at(max(1, budget - reserve))
        if used <= budget:
            return made, True
        # Room for this notice and a little more (its figures change with the body): the
        # body shrinks in steps of whole items, so creeping down by the overshoot can stall.
        reserve = max(reserve + used - budget, notice_units + 8 * (attempt + 1))
    return made, False


# Text only --------------------------------------------------------------------------------


def _mirrors(structured: dict[str, Any], texts: list[str]) -> bool:
    """Whether `structured` repeats the text: the same value, or one key holding it (fastmcp's
    `{"result": value}`, the reference filesystem server's `{"content": text}`)."""
    if len(texts) != 1:
        return False
    value = parse_json(texts[0])
    if value is not None and structured == value:
        return True
    if len(structured) != 1:
        return False
    (held,) = structured.values()
    return held == texts[0] or (value is not None and held == value)


def text_only(result: ToolResult) -> ToolResult:
    """`result` with no structured content, its text saying all it said: a mirror of the text
    is dropped, other structured content is added as one JSON text block (a copy; `result` is
    not changed)."""
    structured = result.structured_content
    if structured is None:
        return result
    texts = [b.text for b in result.content if isinstance(b, TextContent)]
    content: list[ContentBlock] = list(result.content)
    if not _mirrors(structured, texts):
        content.append(TextContent(type="text", text=wire_json(structured)))
    return rebuild(result, content, None)


# The guard: measure a result, cut it when over ---------------------------------------------


def _describe(block: ContentBlock) -> str:
    if isinstance(block, (ImageContent, AudioContent)):
        return f"{block.type} ({block.mime_type}, {len(block.data):,} base64 characters)"
    if isinstance(block, EmbeddedResource):
        return f"embedded resource {block.resource.uri}"
    return block.type


class ResultGuard:
    """Measures results and cuts those over a budget; cut results go to `cache` for paging.

    `counter` counts budget units (a `WalledCounter` for walls beyond tokens); `source` says
    where the walls come from (`profile codex`), for notices; `ttl` how long a handle lives.
    """

    def __init__(
        self,
        counter: TokenCounter,
        cache: PageCache[Remainder],
        more_tool: str | None,
        *,
        source: str = "walls set by the server",
    ) -> None:
        self.counter, self.cache, self.more_tool, self.source = counter, cache, more_tool, source
        self._sizes: dict[str, tuple[int, int]] = {}
        """Texts of more than `MEMO_CHARS` measured: the budget counted to, and the count
        (`within` and `cut` both measure the whole result: it is counted once)."""

    def walls(self, budget: int) -> Walls:
        """The walls a budget of `budget` units stands for."""
        if isinstance(self.counter, WalledCounter):
            return self.counter.walls.with_tokens(budget)
        return Walls(budget)

    def bound(self, *kept: str) -> Wall:
        """The wall `kept` (what a cut kept, in its parts) comes nearest."""
        return self.counter.bound(*kept) if isinstance(self.counter, WalledCounter) else "tokens"

    def header(self, budget: int, *kept: str) -> str:
        """`cut to fit 4,000 tokens, 40,000 characters (tokens bound; profile default)`: the
        walls, the one that bound, and where they come from."""
        bound = WALL_WORDS[self.bound(*kept)]
        return f"cut to fit {self.walls(budget).describe()} ({bound} bound; {self.source})"

    def size(self, text: str, budget: int) -> int:
        """Units in `text`, or more than `budget` when it is over (no token is longer than 64
        characters, so a long text need not be counted to know; a counter that stops early
        stops at `budget`)."""
        if len(text) > (budget + 1) * 64:
            return budget + 1
        if len(text) < MEMO_CHARS:
            return count_up_to(self.counter, text, budget)
        known = self._sizes.get(text)
        if known is not None and (known[1] <= known[0] or known[1] > budget):
            return known[1]  # an exact count, or a floor already over this budget
        units = count_up_to(self.counter, text, budget)
        self._sizes[text] = (budget, units)
        return units

    def used(self, result: ToolResult, budget: int) -> int:
        """Units of everything the model may read (at most `budget + 1`: counting stops there)."""
        used = 0
        for block in result.content:
            used += self.size(visible_text(block), budget - used)
            if used > budget:
                return budget + 1
        if result.structured_content is not None:
            used += self.size(wire_json(result.structured_content), budget - used)
        return min(used, budget + 1)

    def within(self, result: ToolResult, budget: int) -> bool:
        """True when everything the model may read counts at most `budget` units."""
        return self.used(result, budget) <= budget

    def cut(self, result: ToolResult, budget: int, tool: str) -> GuardOutcome:
        """`result` within `budget`, as text only (`text_only`): see the module
        docstring."""
        result = text_only(result)
        texts = [b.text for b in result.content if isinstance(b, TextContent)]
        text_units = sum(self.size(text, budget) for text in texts)
        media: list[ContentBlock] = [b for b in result.content if not isinstance(b, TextContent)]
        if text_units <= budget:
            return self._cut_media(result, budget, budget - text_units, tool)
        return TextCut(self, result, budget, tool, texts, media).run()

    def _cut_media(self, result: ToolResult, budget: int, left: int, tool: str) -> GuardOutcome:
        """The text fits: keep the media that fit what is left, in order; note the others."""
        dropped: list[ContentBlock] = []
        note = self.media_note(budget, [b for b in result.content if b.type != "text"])
        left -= self.size(note, budget)
        content: list[ContentBlock] = []
        for block in result.content:
            size = 0 if isinstance(block, TextContent) else self.size(visible_text(block), left)
            if size <= left:
                content.append(block)
                left -= size
            else:
                dropped.append(block)
                if len(dropped) == 1:
                    content.append(TextContent(type="text", text=""))  # the note goes here
        note = self.media_note(budget, dropped)
        content = [
            TextContent(type="text", text=note) if _is_placeholder(b) else b for b in content
        ]
        summary = f"{tool}: {len(dropped)} of {len(result.content)} blocks left out ({note})"
        return GuardOutcome(
            result=rebuild(result, content, result.structured_content), summary=summary
        )

    def media_note(self, budget: int, blocks: list[ContentBlock]) -> str:
        if not blocks:
            return ""
        what = ", ".join(_describe(b) for b in blocks[:3])
        more = f" and {len(blocks) - 3} more" if len(blocks) > 3 else ""
        walls = f"walls {self.walls(budget).describe()}, {self.source}"
        return f"[ragbudget: left out, over the {budget:,}-token budget: {what}{more}; {walls}]"


def _is_placeholder(block: ContentBlock) -> bool:
    return isinstance(block, TextContent) and block.text == ""


# The cut of a text-only result ------------------------------------------------------------


def _cut_list(cuts: list[Cut], limit: int = 3) -> str:
    shown = "; ".join(cut.describe() for cut in cuts[:limit])
    return shown + (f"; and {len(cuts) - limit} more cuts" if len(cuts) > limit else "")


def _lines(text: str) -> int:
    return text.count("\n") + (0 if text.endswith("\n") else 1)


def _cuts(remainder: Remainder) -> list[Cut]:
    return [Cut(s.path or (), s.kind, s.start, s.total) for s in remainder.segments]


class TextCut:
    """One cut of a text-only result (`text_only`) over the budget."""

    def __init__(
        self,
        guard: ResultGuard,
        result: ToolResult,
        budget: int,
        tool: str,
        texts: list[str],
        media: list[ContentBlock],
    ) -> None:
        self.guard, self.result, self.budget, self.tool = guard, result, budget, tool
        self.lead: list[str] = []
        """Blocks before a last block of JSON, shown whole on the first page (structured
        content of its own comes last: `text_only`)."""
        last = parse_json(texts[-1]) if len(texts) > 1 else None
        if last is not None and sum(guard.size(t, budget) for t in texts[:-1]) <= budget // 2:
            self.lead, texts = texts[:-1], texts[-1:]
        self.text = texts[0] if len(texts) == 1 else "\n\n".join(texts)
        self.value = parse_json(self.text) if len(texts) == 1 else None
        self.note = guard.media_note(budget, media)
        self.handle = guard.cache.new_handle()

    def _remainder(self, root: Any, segments: list[Segment]) -> Remainder:
        return Remainder(root, segments, walls=self.guard.walls(self.budget), tool=self.tool)

    def _body(self, budget: int) -> tuple[str, Remainder]:
        """The first page within `budget` units, and what is left."""
        return first_page(
            self.text,
            budget,
            self.guard.counter,
            value=self.value,
            size=self.guard.size,
            walls=self.guard.walls(self.budget),
            tool=self.tool,
        )

    def _notice(self, remainder: Remainder, body: str, kept: bool, sent: str) -> str:
        """The notice for a first page `body`; `sent` is what the bound wall is judged on."""
        header = self.guard.header(self.budget, sent)
        if remainder.left == 0:
            return f"[ragbudget: {header}; the text is whole.]"
        if remainder.segments[0].path is None:
            what = (
                f"showing lines 1-{_lines(body):,} of {_lines(self.text):,} "
                f"({len(body):,} of {len(self.text):,} characters)"
            )
        else:
            what = f"the JSON is valid but shortened: {_cut_list(_cuts(remainder))}"
        tool = self.guard.more_tool
        if kept and tool is not None:
            follow = f" Call {more_call(tool, self.handle, 0)} for the next page."
        elif tool is None:
            follow = " Ask for less to see the rest (a smaller page, narrower arguments)."
        else:
            follow = " The rest was not kept (larger than the page cache): ask for less."
        return f"[ragbudget: {header}; {what}.{follow}]"

    def _first_reserve(self) -> int:
        """A first guess of the notice's size: for a text, that of a notice stating the whole
        text's figures (a few units more for the wall's name), so the first page found is
        usually the one sent; JSON notices vary more, and start from 80."""
        if self.value is not None:
            return 80
        whole = self._remainder(self.text, [Segment(None, "chars", 0, len(self.text))])
        draft = self._notice(whole, self.text, True, "")  # no count of the whole text
        return max(80, self.guard.size(draft, self.budget) + 8)

    def run(self) -> GuardOutcome:
        size, budget, cache = self.guard.size, self.budget, self.guard.cache
        note_units = size(self.note, budget) if self.note else 0
        note_units += sum(size(text, budget) for text in self.lead)
        keepable = cache.max_entries > 0 and len(self.text) <= cache.max_chars
        nbytes: int | None = None

        def attempt(room: int) -> tuple[tuple[str, Remainder, bool, str, int], int, int]:
            nonlocal nbytes
            body, remainder = self._body(room)
            if keepable and remainder.left and nbytes is None:
                nbytes = remainder.held_bytes(cache.max_bytes)
            kept = keepable and remainder.left > 0 and (nbytes or 0) <= cache.max_bytes
            notice = self._notice(remainder, body, kept, body)
            notice_units = size(notice, budget)
            used = size(body, budget) + notice_units
            return (body, remainder, kept, notice, used + note_units), used, notice_units

        # The reserve for the notice is a first guess, corrected by the loop if short.
        made, fits = fit_with_notice(budget - note_units, self._first_reserve(), attempt)
        body, remainder, kept, notice, used = made
        if not fits:  # a counter far from additive: send nothing rather than too much
            body, kept = "", False
            walls = self.guard.walls(budget).describe()
            notice = (
                f"[ragbudget: result left out: no part of it fit {walls} ({self.guard.source})]"
            )
            used = size(notice, budget)
        kept = kept and cache.put(self.handle, remainder, len(self.text), nbytes=nbytes or 0)
        content: list[ContentBlock] = [TextContent(type="text", text=t) for t in self.lead]
        content.append(TextContent(type="text", text=body))
        if self.note:
            content.append(TextContent(type="text", text=self.note))
        content.append(TextContent(type="text", text=notice))
        figures = {
            "max_tokens": budget,
            "walls": self.guard.walls(budget).describe(),
            "source": self.guard.source,
            "text_tokens": used,
            "counter": self.guard.counter.name,
            "handle": self.handle if kept else None,
            "offsets_left": remainder.left,
        }
        summary = f"{self.tool}: result cut to fit {budget:,} tokens {notice}"
        return GuardOutcome(rebuild(self.result, content, None, figures), summary)


# Errors -----------------------------------------------------------------------------------


def cut_error(
    guard: ResultGuard, units: int, message: str, tool: str
) -> tuple[str, GuardOutcome] | None:
    """`message` cut to fit `units` (with what to report), or None when it fits as it is."""
    if guard.size(message, units) <= units:
        return None
    result = ToolResult(content=[TextContent(type="text", text=message)], is_error=True)
    target = units
    for _ in range(RETRIES):
        outcome = guard.cut(result, target, tool)
        blocks = [b.text for b in outcome.result.content if isinstance(b, TextContent)]
        text = SEPARATOR.join(block for block in blocks if block)
        used = guard.size(text, units)
        if used <= units:
            return text, outcome
        target -= used - units + 4  # the join cost more than the parts: ask for less
    notice = f"[ragbudget: error message left out: no part of it fit {units:,} units]"
    return notice, GuardOutcome(outcome.result, f"{tool}: {notice}")


# The continuation tool --------------------------------------------------------------------


class ContinuationNameTaken(MCPError):
    """The wrapped server has a tool named like the continuation tool: listing its tools is
    refused with this error (an MCP internal error whose message says what to do)."""

    def __init__(self, message: str) -> None:
        super().__init__(INTERNAL_ERROR, message)


def _name_taken(name: str) -> str:
    return (
        f"this server has its own tool named {name!r}, which TokenBudgetMiddleware's "
        f"continuation tool would replace: pass more_tool='<a free name>' to "
        f"TokenBudgetMiddleware (or rename the server's tool)"
    )


async def check_name_free(server: FastMCP | None, name: str, *, calling: bool = False) -> None:
    """Refuse a `server` that has a tool of its own named `name`: `ContinuationNameTaken` when
    listing tools, a `ToolError` when `calling` that name. Logged at ERROR for the server's
    author."""
    if server is None:
        return
    own = await Provider.get_tool(server, name)  # the server's tools, without injected ones
    if own is None:
        return
    message = _name_taken(name)
    logger.error("%s", message)
    if calling:
        raise ToolError(message)
    raise ContinuationNameTaken(message)


def _description(cache: PageCache[Remainder]) -> str:
    return (
        "Continue a tool result that was cut to fit the client's limits, one page at a time. "
        "Pages of a text result are its next lines; pages of a JSON result are JSON objects "
        "naming the `path` they continue and the `start` index, with the next `items`, `text` "
        f"or `entries` there. A handle lives {describe_ttl(cache.ttl_seconds)} after its last "
        f"use (at most {cache.max_entries:,} results are kept, fewer when they are large); "
        "with an expired or unknown handle, call the original tool again."
    )


def make_more_tool(name: str, cache: PageCache[Remainder], page: Callable[..., ToolResult]) -> Tool:
    """The continuation tool named `name`, serving pages with `page(handle, offset)`."""

    async def more(
        handle: Annotated[
            str,
            Field(
                description="The handle a cut result's notice gives.", min_length=1, max_length=64
            ),
        ],
        offset: Annotated[
            int,
            Field(
                description="Where to continue: 0 after the first page, then the offset "
                "each page's notice gives.",
                ge=0,
            ),
        ] = 0,
    ) -> ToolResult:
        return await anyio.to_thread.run_sync(page, handle, offset)

    return Tool.from_function(
        more,
        name=name,
        description=_description(cache),
        annotations=ToolAnnotations(
            read_only_hint=True, idempotent_hint=True, open_world_hint=False
        ),
    )


def serve_page(
    cache: PageCache[Remainder],
    counter: TokenCounter,
    tool: str,
    handle: str,
    offset: int,
    walls: Walls | None = None,
) -> ToolResult:
    """The page `tool(handle, offset)` returns, within the walls of the call that was cut
    (and `walls`, those of the client asking now, when given). Blocking: counts tokens."""
    remainder = cache.get(handle)
    if remainder is None:
        msg = (
            f"handle {handle!r} is unknown or expired (a handle lives "
            f"{describe_ttl(cache.ttl_seconds)} after its last use, and at most "
            f"{cache.max_entries:,} results are kept): call the original tool again"
        )
        raise ToolError(msg)
    limits = remainder.walls if walls is None else remainder.walls.tightest(walls)
    units = WalledCounter(counter, limits)
    budget = limits.tokens

    def attempt(room: int) -> tuple[tuple[Page, str], int, int]:
        try:
            page = remainder.page(offset, room, units)
        except ValueError as exc:
            raise ToolError(str(exc)) from exc
        notice = _page_notice(tool, handle, remainder, page)
        notice_units = units.count(notice)
        return (page, notice), units.count(page.body) + notice_units, notice_units

    (page, notice), fits = fit_with_notice(budget, 60, attempt)
    if not fits:  # pragma: no cover - only a counter that is far from additive gets here
        msg = f"no page of this result fits {limits.describe()} by {counter.name}"
        raise ToolError(msg)
    return ToolResult(
        content=[TextContent(type="text", text=page.body), TextContent(type="text", text=notice)]
    )


def _page_notice(tool: str, handle: str, remainder: Remainder, page: Page) -> str:
    segment = page.segment
    units = UNIT_NAMES[segment.kind]
    where = "" if segment.path is None else f" of {path_label(segment.path)}"
    shown = f"{units} {page.first:,}-{page.last - 1:,} of {segment.total:,}{where}"
    if page.next_offset is None:
        follow = "This is the last page."
    else:
        follow = f"Next page: {more_call(tool, handle, page.next_offset)}."
    return f"[ragbudget: {remainder.tool} result, {shown}. {follow}]"
