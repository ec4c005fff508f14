"""One cut of a result over its walls: the first page, structured content, notice and handle.

The text blocks are joined (a single block that holds a JSON list or object is shortened as
JSON, anything else after a line) and the largest first page that fits is kept, with what was
left out handed to the page cache as a `Remainder`. Structured content is budgeted with the
text (`structured`): a mirror of the text is shortened with it, so each takes about half the
walls; structured content of its own gets a share (up to half, more when the text is short)
and the text the rest. Media are replaced by one note. The notice says what was left out,
which wall bound, which profile is in force, and how to read on.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fastmcp.tools import ToolResult
from mcp_types import ContentBlock, TextContent

from ragbudget.middleware.json_trim import Cut, dumps, trim
from ragbudget.middleware.outcome import RETRIES, GuardOutcome, rebuild
from ragbudget.middleware.paging import Remainder, Segment, first_text_page, more_call
from ragbudget.middleware.structured import (
    MirrorCounter,
    mirror_of,
    mirrored,
    parse_json,
    schema_error,
    wire_json,
)

if TYPE_CHECKING:
    from ragbudget.middleware.result_guard import ResultGuard

__all__ = ["NOTICE_ROOM", "TextCut"]

NOTICE_ROOM = 200
"""Units left for the notice when structured content of its own is given its share."""

Structured = tuple[dict[str, Any] | None, str, str | None]
"""Structured content to send, a phrase for the notice, and the schema mismatch that made it
be dropped (if it was)."""


def _cut_list(cuts: list[Cut], limit: int = 3) -> str:
    shown = "; ".join(cut.describe() for cut in cuts[:limit])
    return shown + (f"; and {len(cuts) - limit} more cuts" if len(cuts) > limit else "")


def _lines(text: str) -> int:
    return text.count("\n") + (0 if text.endswith("\n") else 1)


def _cuts(remainder: Remainder) -> list[Cut]:
    return [Cut(s.path or (), s.kind, s.start, s.total) for s in remainder.segments]


class TextCut:
    """One cut of a result whose text and structured content together are over the budget."""

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
        self.value = parse_json(self.text) if len(texts) == 1 else None
        self.note = guard.media_note(budget, media)
        self.handle = guard.cache.new_handle()
        self.mirror = mirror_of(result.structured_content, self.value, self.text)

    def _remainder(self, root: Any, segments: list[Segment]) -> Remainder:
        return Remainder(root, segments, walls=self.guard.walls(self.budget), tool=self.tool)

    def _body(self, budget: int) -> tuple[str, Any, Remainder, bool]:
        """The first page within `budget` units (with its mirror, if any), the shown value,
        what is left, and whether the mirror fits with it."""
        count, mirror = self.guard.size, self.mirror
        if self.value is not None:
            share = min(1.0, budget * 3 / max(1, len(self.text)))  # ~3 characters a token
            share /= 2 if mirror else 1

            def fits(value: Any) -> bool:
                used = count(dumps(value), budget)
                if mirror is not None and used <= budget:
                    used += count(wire_json(mirrored(mirror, value)), budget - used)
                return used <= budget

            shown, cuts, fitted = trim(self.value, fits, share=share)
            if not fitted and mirror is not None:  # the mirror cannot come too: JSON alone
                mirror = None
                shown, cuts, fitted = trim(self.value, fits, share=share * 2)
            if fitted:
                remainder = Remainder.from_cuts(
                    self.value, cuts, walls=self.guard.walls(self.budget), tool=self.tool
                )
                return dumps(shown), shown, remainder, mirror is not None
        counter = self.guard.counter
        with_mirror = mirror == "wrap" and self.value is None
        if with_mirror:
            counter = MirrorCounter(counter)
        end = first_text_page(self.text, 0, budget, counter)
        remainder = self._remainder(self.text, [Segment(None, "chars", end, len(self.text))])
        return self.text[:end], self.text[:end], remainder, with_mirror

    def _mirror_structured(self, shown: Any, with_mirror: bool) -> Structured:
        """The mirror, shortened as the text was (or dropped when it could not come along)."""
        if self.mirror is None:
            return None, "", None
        if with_mirror:
            return self._checked(
                mirrored(self.mirror, shown), " Structured content shortened the same way."
            )
        return None, " Structured content dropped: it did not fit beside the text.", None

    def _own_structured(self, share: int) -> Structured:
        """Structured content of its own within `share` units: whole, shortened, or dropped."""
        structured = self.result.structured_content
        size = self.guard.size

        def fits(value: Any) -> bool:
            return size(wire_json(value), share) <= share

        if structured is None:
            return None, "", None
        if fits(structured):
            return structured, "", None
        candidate, cuts, fitted = trim(structured, fits)
        if not fitted:
            return None, " Structured content dropped: too large even when shortened.", None
        return self._checked(candidate, f" Structured content shortened ({_cut_list(cuts)}).")

    def _checked(self, candidate: Any, phrase: str) -> Structured:
        error = schema_error(candidate, self.schema)
        if error is None:
            return candidate, phrase, None
        dropped = " Structured content dropped: shortened, it no longer matches the output schema."
        return None, dropped, error

    def _notice(
        self, remainder: Remainder, sent: tuple[str, ...], body: str, kept: bool, extra: str
    ) -> str:
        header = self.guard.header(self.budget, *sent)
        if remainder.left == 0:
            return f"[ragbudget: {header}; the text is whole.{extra}]"
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
        return f"[ragbudget: {header}; {what}.{extra}{follow}]"

    def _first_reserve(self) -> int:
        """A first guess of the notice's size: for a text, that of a notice stating the whole
        text's figures (a few units more for the wall's name), so the first page found is
        usually the one sent; JSON notices vary more, and start from 80."""
        if self.value is not None:
            return 80
        whole = self._remainder(self.text, [Segment(None, "chars", 0, len(self.text))])
        draft = self._notice(whole, ("",), self.text, True, "")
        return max(80, self.guard.size(draft, self.budget) + 8)

    def run(self, text_units: int, structured_units: int) -> GuardOutcome:
        size, budget, cache = self.guard.size, self.budget, self.guard.cache
        note_units = size(self.note, budget) if self.note else 0
        own: Structured | None = None
        if self.mirror is None:
            room = budget - text_units - NOTICE_ROOM - note_units
            own = self._own_structured(max(1, min(structured_units, max(budget // 2, room))))
        own_units = 0 if own is None or own[0] is None else size(wire_json(own[0]), budget)
        keepable = cache.max_entries > 0 and len(self.text) <= cache.max_chars
        nbytes: int | None = None
        reserve = self._first_reserve()  # corrected below if short
        for attempt in range(RETRIES):
            body, shown, remainder, with_mirror = self._body(
                max(1, budget - note_units - own_units - reserve)
            )
            if own is not None:
                structured, phrase, error = own
            else:
                structured, phrase, error = self._mirror_structured(shown, with_mirror)
            if keepable and remainder.left and nbytes is None:
                nbytes = remainder.held_bytes(cache.max_bytes)
            kept = keepable and remainder.left > 0 and (nbytes or 0) <= cache.max_bytes
            wire = "" if structured is None else wire_json(structured)
            notice = self._notice(remainder, (body, wire), body, kept, phrase)
            notice_units = size(notice, budget)
            used = size(body, budget) + size(wire, budget) + notice_units + note_units
            if used <= budget:
                break
            # Room for this notice and a little more (its figures change with the body): the
            # body shrinks in steps of whole items, so creeping down by the overshoot can stall.
            reserve = max(reserve + used - budget, notice_units + 8 * (attempt + 1))
        else:  # a counter far from additive: send nothing rather than too much
            body, structured, kept = "", None, False
            walls = self.guard.walls(budget).describe()
            notice = (
                f"[ragbudget: result left out: no part of it fit {walls} ({self.guard.source})]"
            )
            used = size(notice, budget)
        kept = kept and cache.put(self.handle, remainder, len(self.text), nbytes=nbytes or 0)
        content: list[ContentBlock] = [TextContent(type="text", text=body)]
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
        problems = []
        if error is not None:
            problems.append(
                f"{self.tool}: shortened structured content no longer matches the output schema "
                f"({error}); it was dropped. Exclude the tool or relax its schema's minimums."
            )
        summary = f"{self.tool}: result cut to fit {budget:,} tokens {notice}"
        return GuardOutcome(rebuild(self.result, content, structured, figures), summary, problems)
