"""One cut of a result over its walls: the first page, the notice and the handle, as text.

A cut result carries no structured content (`structured.text_only` made its text say all of
it first): clients that forward `structuredContent` then forward the text, so every client's
model reads the cut, the notice and the handle. The text blocks are joined (a single block that
holds a JSON list or object is shortened as JSON, anything else after a line) and the largest
first page that fits is kept, with what was left out handed to the page cache as a
`Remainder`. Media are replaced by one note. The notice says what was left out, which wall
bound, which profile is in force, and how to read on.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fastmcp.tools import ToolResult
from mcp_types import ContentBlock, TextContent

from ragbudget.middleware.outcome import RETRIES, GuardOutcome, rebuild
from ragbudget.pages import Cut, Remainder, Segment, first_page, parse_json
from ragbudget.pages.remainder import more_call

if TYPE_CHECKING:
    from ragbudget.middleware.result_guard import ResultGuard

__all__ = ["TextCut"]


def _cut_list(cuts: list[Cut], limit: int = 3) -> str:
    shown = "; ".join(cut.describe() for cut in cuts[:limit])
    return shown + (f"; and {len(cuts) - limit} more cuts" if len(cuts) > limit else "")


def _lines(text: str) -> int:
    return text.count("\n") + (0 if text.endswith("\n") else 1)


def _cuts(remainder: Remainder) -> list[Cut]:
    return [Cut(s.path or (), s.kind, s.start, s.total) for s in remainder.segments]


class TextCut:
    """One cut of a text-only result (`structured.text_only`) over the budget."""

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
        content of its own comes last: `structured.text_only`)."""
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
        reserve = self._first_reserve()  # corrected below if short
        for attempt in range(RETRIES):
            body, remainder = self._body(max(1, budget - note_units - reserve))
            if keepable and remainder.left and nbytes is None:
                nbytes = remainder.held_bytes(cache.max_bytes)
            kept = keepable and remainder.left > 0 and (nbytes or 0) <= cache.max_bytes
            notice = self._notice(remainder, body, kept, body)
            notice_units = size(notice, budget)
            used = size(body, budget) + notice_units + note_units
            if used <= budget:
                break
            # Room for this notice and a little more (its figures change with the body): the
            # body shrinks in steps of whole items, so creeping down by the overshoot can stall.
            reserve = max(reserve + used - budget, notice_units + 8 * (attempt + 1))
        else:  # a counter far from additive: send nothing rather than too much
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
