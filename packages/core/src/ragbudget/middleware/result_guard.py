"""Cutting one tool result to its walls: its text, its JSON, media; structured content as text.

The walls cover everything a model may read, under any client's rule (text, structured content
or both): the text blocks (counted one by one and added up), any image, audio or embedded
resource kept (counted on its base64 data or text), and the structured content as it goes on
the wire (`structured.wire_json`). Sizes are budget units of a `WalledCounter` (tokens,
characters and bytes at once), so a result within `walls.tokens` units is within every wall.
A result within them is returned as it is. A result over them is made text only
(`structured.text_only`), so every client forwards its text. When only media are then over,
those that do not fit are replaced by one note. Otherwise `text_cut` cuts: JSON is shortened
with `ragbudget.pages` (still valid, same shape), other text after a line; media are replaced by a
note; a notice block at the end says what was left out, which wall bound, which profile is in
force, and which `more(handle=..., offset=...)` call continues.
"""

from __future__ import annotations

from fastmcp.tools import ToolResult
from mcp_types import (
    AudioContent,
    BlobResourceContents,
    ContentBlock,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
)

from ragbudget.counters import TokenCounter, count_up_to
from ragbudget.limits import Wall, WalledCounter, Walls
from ragbudget.middleware.outcome import GuardOutcome, rebuild
from ragbudget.middleware.structured import text_only, wire_json
from ragbudget.middleware.text_cut import TextCut
from ragbudget.pages.cache import PageCache
from ragbudget.pages.remainder import Remainder

__all__ = ["ResultGuard", "visible_text"]

MEMO_CHARS = 10_000
"""Texts at least this long have their sizes remembered by the guard that measured them."""

WALL_WORDS: dict[Wall, str] = {"tokens": "tokens", "chars": "characters", "bytes": "bytes"}


def visible_text(block: ContentBlock) -> str:
    """What a block puts in front of a model, as text: its text, or its base64 data."""
    if isinstance(block, TextContent):
        return block.text
    if isinstance(block, (ImageContent, AudioContent)):
        return block.data
    if isinstance(block, EmbeddedResource):
        resource = block.resource
        return resource.blob if isinstance(resource, BlobResourceContents) else resource.text
    if isinstance(block, ResourceLink):
        return f"{block.name} {block.uri}"
    return ""  # pragma: no cover - the ContentBlock union has no other member


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
        """`result` within `budget`, as text only (`structured.text_only`): see the module
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
