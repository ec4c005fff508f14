"""Cutting one tool result to a token budget: its text, its JSON, its structured content, media.

The budget covers what a model reads: the text blocks (counted one by one and added up) plus
any image, audio or embedded resource kept (counted on its base64 data or text). A result
within it is returned as it is. Otherwise the text comes first: JSON is shortened with
`json_trim` (still valid, same shape), other text is cut after a line; media that do not fit
what is left are replaced by one note; a notice block at the end says what was left out and
which `more(handle=..., offset=...)` call continues. Structured content that mirrors the text
(fastmcp's rendering of a list, dict or model return) is shortened the same way; structured
content of its own is shortened separately when it alone is over the budget.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

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
from pydantic import TypeAdapter, ValidationError

from ragbudget.counters import TokenCounter
from ragbudget.middleware.json_trim import Cut, dumps, trim
from ragbudget.middleware.page_cache import PageCache
from ragbudget.middleware.paging import Remainder, Segment, first_text_page, more_call

__all__ = ["GuardOutcome", "ResultGuard", "visible_text"]

META_KEY = "ragbudget_cut"
"""Key of the cut's figures in a cut result's `_meta`."""

RETRIES = 6
"""Attempts at a body and notice within the budget (a notice's size depends on the body)."""


@dataclass
class GuardOutcome:
    """A cut result and what to report about it."""

    result: ToolResult
    summary: str
    problems: list[str] = field(default_factory=list)
    """What the server's author should fix (logged at WARNING)."""


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


@lru_cache(maxsize=128)
def _adapter(schema: str) -> TypeAdapter[Any]:
    from fastmcp.utilities.json_schema_type import json_schema_to_type_adapter

    adapter: TypeAdapter[Any] = json_schema_to_type_adapter(json.loads(schema))
    return adapter


def _schema_error(value: dict[str, Any], schema: dict[str, Any] | None) -> str | None:
    """Why `value` does not match `schema` (None when it does, or when there is no schema)."""
    if schema is None:
        return None
    try:
        _adapter(json.dumps(schema, sort_keys=True)).validate_python(value)
    except ValidationError as exc:
        return str(exc).splitlines()[0]
    return None


def _parse_json(text: str) -> Any:
    if not text.lstrip().startswith(("{", "[")):
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, (dict, list)) else None


def _cut_list(cuts: list[Cut], limit: int = 3) -> str:
    shown = "; ".join(cut.describe() for cut in cuts[:limit])
    return shown + (f"; and {len(cuts) - limit} more cuts" if len(cuts) > limit else "")


class ResultGuard:
    """Measures results and cuts those over a budget; cut results go to `cache` for paging."""

    def __init__(
        self, counter: TokenCounter, cache: PageCache[Remainder], more_tool: str | None
    ) -> None:
        self.counter, self.cache, self.more_tool = counter, cache, more_tool

    def size(self, text: str, budget: int) -> int:
        """Tokens in `text`, or `budget + 1` when it is certainly over (no token is longer
        than 64 characters, so a long text need not be counted to know)."""
        if len(text) > (budget + 1) * 64:
            return budget + 1
        return self.counter.count(text)

    def within(self, result: ToolResult, budget: int) -> bool:
        """True when everything the model reads counts at most `budget` tokens."""
        used = 0
        for block in result.content:
            used += self.size(visible_text(block), budget - used)
            if used > budget:
                return False
        return True

    def cut(
        self, result: ToolResult, budget: int, tool: str, schema: dict[str, Any] | None
    ) -> GuardOutcome:
        """`result` within `budget`: see the module docstring. `schema` is the tool's output
        schema, which trimmed structured content must still match (else it is dropped)."""
        texts = [b.text for b in result.content if isinstance(b, TextContent)]
        text_tokens = sum(self.size(text, budget) for text in texts)
        media: list[ContentBlock] = [b for b in result.content if not isinstance(b, TextContent)]
        if text_tokens <= budget:
            return self._cut_media(result, budget, budget - text_tokens, tool)
        return _TextCut(self, result, budget, tool, schema, texts, media).run()

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
            result=_rebuild(result, content, result.structured_content), summary=summary
        )

    def media_note(self, budget: int, blocks: list[ContentBlock]) -> str:
        if not blocks:
            return ""
        what = ", ".join(_describe(b) for b in blocks[:3])
        more = f" and {len(blocks) - 3} more" if len(blocks) > 3 else ""
        return f"[ragbudget: left out, over the {budget:,}-token budget: {what}{more}]"


def _is_placeholder(block: ContentBlock) -> bool:
    return isinstance(block, TextContent) and block.text == ""


def _rebuild(
    result: ToolResult,
    content: list[ContentBlock],
    structured: dict[str, Any] | None,
    figures: dict[str, Any] | None = None,
) -> ToolResult:
    meta = result.meta if figures is None else {**(result.meta or {}), META_KEY: figures}
    return ToolResult(
        content=content, structured_content=structured, meta=meta, is_error=result.is_error
    )


class _TextCut:
    """One cut of a result whose text is over the budget (the text takes the whole budget)."""

    def __init__(
        self,
        guard: ResultGuard,
        result: ToolResult,
        budget: int,
        tool: str,
        schema: dict[str, Any] | None,
        texts: list[str],
        media: list[ContentBlock],
    ) -> None:
        self.guard, self.result, self.budget, self.tool, self.schema = (
            guard, result, budget, tool, schema,
        )  # fmt: skip
        self.text = texts[0] if len(texts) == 1 else "\n\n".join(texts)
        self.value = _parse_json(self.text) if len(texts) == 1 else None
        self.note = guard.media_note(budget, media)
        self.handle = guard.cache.new_handle()
        structured = result.structured_content
        if structured is None:
            self.mirror: str | None = None
        elif self.value is not None and structured == self.value:
            self.mirror = "same"
        elif structured == {"result": self.value if self.value is not None else self.text}:
            self.mirror = "wrap"
        else:
            self.mirror = None
        self._own: tuple[dict[str, Any] | None, str, str | None] | None = None

    def _body(self, budget: int) -> tuple[str, Any, Remainder]:
        """The first page within `budget` tokens, the shown value, and what is left."""
        count = self.guard.size
        if self.value is not None:
            share = min(1.0, budget * 3 / max(1, len(self.text)))  # ~3 characters a token

            def fits(value: Any) -> bool:
                return count(dumps(value), budget) <= budget

            shown, cuts, fitted = trim(self.value, fits, share=share, known_over=True)
            if fitted:
                remainder = Remainder.from_cuts(
                    self.value, cuts, max_tokens=self.budget, tool=self.tool
                )
                return dumps(shown), shown, remainder
        end = first_text_page(self.text, 0, budget, self.guard.counter)
        segment = Segment(None, "chars", end, len(self.text))
        remainder = Remainder(self.text, [segment], max_tokens=self.budget, tool=self.tool)
        return self.text[:end], self.text[:end], remainder

    def _structured(self, shown: Any) -> tuple[dict[str, Any] | None, str, str | None]:
        """The structured content to send with the first page, a phrase for the notice, and
        the schema mismatch that made it be dropped (if it was)."""
        structured = self.result.structured_content
        if structured is None:
            return None, "", None
        json_body = not isinstance(shown, str)
        if self.mirror == "same" and json_body:
            return self._checked(shown, " Structured content shortened the same way.")
        if self.mirror == "wrap" and (json_body or self.value is None):
            return self._checked({"result": shown}, " Structured content shortened the same way.")
        if self._own is None:
            self._own = self._own_structured(structured)
        return self._own

    def _own_structured(
        self, structured: dict[str, Any]
    ) -> tuple[dict[str, Any] | None, str, str | None]:
        """Structured content that is not the text's mirror: kept unless it alone is over."""
        size = self.guard.size

        def fits(value: Any) -> bool:
            return size(dumps(value), self.budget) <= self.budget

        if fits(structured):
            return structured, "", None
        candidate, cuts, fitted = trim(structured, fits)
        if not fitted:
            return None, " Structured content dropped: too large even when shortened.", None
        return self._checked(candidate, f" Structured content shortened ({_cut_list(cuts)}).")

    def _checked(
        self, candidate: Any, phrase: str
    ) -> tuple[dict[str, Any] | None, str, str | None]:
        error = (
            _schema_error(candidate, self.schema)
            if isinstance(candidate, dict)
            else "not an object"
        )
        if error is None:
            return candidate, phrase, None
        dropped = " Structured content dropped: shortened, it no longer matches the output schema."
        return None, dropped, error

    def _notice(self, remainder: Remainder, shown: str, kept: bool, extra: str) -> str:
        first = remainder.segments[0]
        if first.path is None:
            what = (
                f"showing lines 1-{_lines(shown):,} of {_lines(self.text):,} "
                f"({len(shown):,} of {len(self.text):,} characters)"
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
        return f"[ragbudget: cut to fit {self.budget:,} tokens; {what}.{extra}{follow}]"

    def run(self) -> GuardOutcome:
        size = self.guard.size
        note_tokens = size(self.note, self.budget) if self.note else 0
        cache = self.guard.cache
        kept = cache.max_entries > 0 and len(self.text) <= cache.max_chars
        reserve = 80  # a first guess of the notice's size; corrected below if short
        for attempt in range(RETRIES):
            body, shown, remainder = self._body(max(1, self.budget - note_tokens - reserve))
            structured, phrase, error = self._structured(shown)
            notice = self._notice(remainder, body, kept, phrase)
            notice_tokens = size(notice, self.budget)
            used = size(body, self.budget) + notice_tokens + note_tokens
            if used <= self.budget:
                break
            # Room for this notice and a little more (its figures change with the body): the
            # body shrinks in steps of whole items, so creeping down by the overshoot can stall.
            reserve = max(reserve + used - self.budget, notice_tokens + 8 * (attempt + 1))
        else:  # a counter far from additive: send nothing rather than too much
            body, structured, kept = "", None, False
            notice = f"[ragbudget: result left out: no part of it fit {self.budget:,} tokens]"
            used = size(notice, self.budget)
        kept = kept and cache.put(self.handle, remainder, len(self.text))
        content: list[ContentBlock] = [TextContent(type="text", text=body)]
        if self.note:
            content.append(TextContent(type="text", text=self.note))
        content.append(TextContent(type="text", text=notice))
        figures = {
            "max_tokens": self.budget,
            "text_tokens": used,
            "counter": self.guard.counter.name,
            "handle": self.handle if kept else None,
            "offsets_left": remainder.left,
        }
        problems = []
        if error is not None:
            problems.append(
                f"{self.tool}: shortened structured content no longer matches the output schema "
                f"({error}); it was dropped. Exclude the tool or relax its schema's minimums."
            )
        summary = f"{self.tool}: result cut to fit {self.budget:,} tokens {notice}"
        return GuardOutcome(_rebuild(self.result, content, structured, figures), summary, problems)


def _lines(text: str) -> int:
    return text.count("\n") + (0 if text.endswith("\n") else 1)


def _cuts(remainder: Remainder) -> list[Cut]:
    return [Cut(s.path or (), s.kind, s.start, s.total) for s in remainder.segments]
