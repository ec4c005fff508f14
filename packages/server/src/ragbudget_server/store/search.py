"""Budgeted search responses: the text a model reads stays within `max_tokens`.

The budget covers the whole answer as `SearchResponse.to_text()` renders it, in its format: the
results' headers and the notice (text), or the envelope, field names and escaping (JSON), not
just chunk texts. Records are fetched only as far down the ranking as the budget can reach
(`fetch_ranked`). Stored token counts (when the counter is the store's) guess how many ranked
results fit; the budget primitive (`ragbudget.fitting`) counts the rendered answer from that
guess, once when it is right. A top result that does not fit on its own is cut at a good
boundary and flagged `cut`, never sent whole.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from ragbudget.counters import LazyCounts, TokenCounter
from ragbudget.fitting import Fitted, cut_text, largest_prefix, least_budget, stated_count

from ragbudget_server.store.errors import BudgetTooSmall, StoreError
from ragbudget_server.store.hashing import features
from ragbudget_server.store.models import (
    Format,
    ReadResponse,
    SearchResponse,
    SearchResult,
    shared_folder,
)
from ragbudget_server.store.pages import cite

__all__ = [
    "Hit",
    "RankedPage",
    "Rendering",
    "budget_response",
    "fetch_ranked",
    "first_batch",
    "measure",
    "snippet",
]

_SNIPPET_LINES = 3
_SNIPPET_CHARS = 240


@dataclass(frozen=True)
class Hit:
    """One ranked record from Chroma."""

    id: str
    document: str
    metadata: dict[str, Any]
    distance: float


Fetch = Callable[[list[str]], dict[str, tuple[str, dict[str, Any]]]]
"""Ids -> {id: (document, metadata)} for those that still exist."""

_JOIN_SLACK = 2  # tokens a result's join may save at most, for the search's upper bound
_TOKENS_PER_RESULT_GUESS = 300  # sizes the first fetch before any stored count is seen
_FIELDS_GUESS = 40  # a result's fields around its text, in tokens


def fetch_ranked(
    ranked: Sequence[tuple[str, float]], fetch: Fetch, *, max_tokens: int, concise: bool
) -> list[Hit]:
    """Hits for the ranked `(id, distance)` pairs, fetched only as far down as the budget reaches.

    Texts and metadata are most of a Chroma query's cost (a bare nearest-neighbour search is
    a fifth of it), and a budget keeps only a ranked prefix: so the search asks Chroma for ids
    and distances, then fetches records in growing batches until the stored token counts of
    the fetched ones pass the budget by a margin (a quarter, and two results), enough for the
    budget to find its first misfit among them. Concise snippets are short: all are fetched.
    Records deleted since the query (a concurrent ingest) are skipped.
    """
    batch = len(ranked) if concise else min(len(ranked), first_batch(max_tokens))
    hits: list[Hit] = []
    guess: list[int] = []
    done = 0
    while done < len(ranked):
        part = ranked[done : done + batch]
        records = fetch([i for i, _ in part])
        for id_, distance in part:
            if id_ in records:
                document, meta = records[id_]
                hits.append(Hit(id_, document, meta, distance))
                n = meta.get("json_tokens", meta.get("tokens"))
                guess.append((n if isinstance(n, int) else len(document) // 2) + _FIELDS_GUESS)
        done += len(part)
        if sum(guess) >= 1.25 * max_tokens + 2 * max(guess, default=0):
            break
        batch = done  # double what was fetched
    return hits


def first_batch(max_tokens: int) -> int:
    """How many ranked records `fetch_ranked` fetches first, before any stored count is seen."""
    return max(4, math.ceil(1.25 * max_tokens / _TOKENS_PER_RESULT_GUESS) + 2)


def _query_words(query: str) -> list[str]:
    return [f for f in features(query) if " " not in f and not f.startswith("=")]


def snippet(text: str, start_line: int, words: Sequence[str]) -> tuple[str, int, int]:
    """The few lines of `text` that mention most query words (else its first lines)."""
    lines = text.split("\n")
    lowered = [line.lower() for line in lines]
    scores = [sum(1 for w in words if w in line) for line in lowered]
    best = max(range(len(lines)), key=lambda i: (scores[i], -i)) if words else 0
    if not words or scores[best] == 0:
        best = next((i for i, line in enumerate(lines) if line.strip()), 0)
    shown = lines[best : best + _SNIPPET_LINES]
    while len(shown) > 1 and not shown[-1].strip():
        shown.pop()
    body = "\n".join(shown)
    if len(body) > _SNIPPET_CHARS:
        cut = body.rfind(" ", 0, _SNIPPET_CHARS)
        body = body[: cut if cut > _SNIPPET_CHARS // 2 else _SNIPPET_CHARS].rstrip() + "…"
        shown = body.split("\n")
    return body, start_line + best, start_line + best + len(shown) - 1


def _escapes(text: str) -> int:
    """Rough extra tokens JSON escaping adds to `text` (newlines, quotes, backslashes, tabs)."""
    return text.count("\n") + text.count('"') + text.count("\\") + text.count("\t")


@dataclass(frozen=True)
class Rendering:
    """How a page is rendered: the format, and how notices name the continuation."""

    format: Format = "text"
    offset_hint: str = "offset={offset}"
    """How a notice tells the reader to continue: `offset={offset}` for a model calling a
    tool, `--offset {offset}` for a shell user."""
    budget: int | None = None
    """The budget the page states (its notice, the JSON's `max_tokens`) when it is not the one
    the page is fitted to: a server that keeps room for a line of its own above the page
    states the whole answer's budget, once. None: the page's own."""

    @classmethod
    def of(cls, format: Any, offset_hint: Any, budget: Any = None) -> Rendering:
        """The rendering a caller asked for, checked (a `StoreError` names what is wrong)."""
        if format not in ("text", "json"):
            msg = f"format must be 'text' or 'json', got {format!r}"
            raise StoreError(msg)
        if not isinstance(offset_hint, str) or "{offset}" not in offset_hint:
            msg = f"offset_hint must be a string holding '{{offset}}', got {offset_hint!r}"
            raise StoreError(msg)
        if budget is not None and (isinstance(budget, bool) or not isinstance(budget, int)
                                   or budget < 1):  # fmt: skip
            msg = f"stated_budget must be None or an int >= 1, got {budget!r}"
            raise StoreError(msg)
        return cls(format=format, offset_hint=offset_hint, budget=budget)

    def stated(self, max_tokens: int) -> int:
        """The budget a page fitted to `max_tokens` states."""
        return max_tokens if self.budget is None else self.budget

    def more(self, offset: int) -> str:
        return f". Use {self.offset_hint.format(offset=offset)} to continue"

    def more_in_line(self, line: int, char: int) -> str:
        """The continuation inside line `line`, from character `char` (a shell's flag form,
        `--offset L --char-offset C`, or a tool's `offset=L, char_offset=C`)."""
        at = self.offset_hint.format(offset=line)
        inside = f" --char-offset {char}" if at.startswith("--") else f", char_offset={char}"
        return f". Use {at}{inside} to continue"


TEXT = Rendering()
"""The default rendering: lean text, notices naming `offset=N`."""


class RankedPage:
    """Assembles candidate responses for one page of ranked hits (the plain ranking's and
    the evidence selection's, `store.selection`)."""

    def __init__(
        self,
        results: list[SearchResult],
        *,
        offset: int,
        total_count: int,
        max_tokens: int,
        counter: TokenCounter,
        rendering: Rendering,
    ) -> None:
        self.results, self.offset, self.total = results, offset, total_count
        self.max_tokens, self.counter, self.rendering = max_tokens, counter, rendering

    def assemble(self, k: int, cut: SearchResult | None = None) -> SearchResponse:
        """The response keeping the first `k` results (the last one `cut` when given).

        The budget goes down the ranking and stops at the first result that does not fit; the
        next page starts at it. `used_tokens` holds the budget until `measure` sets it (the
        widest value it can take, so a JSON rendering is never counted short).
        """
        n = len(self.results)
        kept = self.results[:k] if cut is None else [*self.results[: k - 1], cut]
        truncated = k < n or cut is not None
        more = self.offset + n < self.total
        next_offset = self.offset + k if k < n else (self.offset + n if more else None)
        return self.response(kept, cut, next_offset, truncated)

    def response(
        self,
        results: list[SearchResult],
        cut: SearchResult | None,
        next_offset: int | None,
        truncated: bool,
        *,
        covered: int | None = None,
        capped: list[str] | None = None,
    ) -> SearchResponse:
        """The response showing `results` on this page, with its notice. `covered`: how many
        ranks from the offset the results account for (merged spans and duplicates take in
        more than one; default: one each); `capped`: ids the cap per file left out."""
        k = len(results) if covered is None else covered
        return SearchResponse(
            results=results,
            total_count=self.total,
            offset=self.offset,
            next_offset=next_offset,
            truncated=truncated,
            used_tokens=self.max_tokens,
            max_tokens=self.rendering.stated(self.max_tokens),
            counter=self.counter.name,
            format=self.rendering.format,
            notice=self._notice(k, truncated, cut, next_offset, len(capped or ())),
            capped_ids=capped or None,
        )

    def _notice(
        self,
        k: int,
        truncated: bool,
        cut: SearchResult | None,
        next_offset: int | None,
        capped: int = 0,
    ) -> str | None:
        if self.total == 0:
            return "[No results: the collection holds no matching chunks]"
        if not truncated and next_offset is None and not capped:
            return None
        shown = f"results {self.offset + 1}-{self.offset + k}" if k else "no results"
        text = f"[Showing {shown} of {self.total:,}"
        if truncated:
            text += f" ({self.rendering.stated(self.max_tokens):,}-token budget)"
        if cut is not None:
            text += f"; cut to fit: {cut.id}"
        if capped:
            text += f"; {capped} left out by the cap per file"
        if next_offset is not None:
            text += self.rendering.more(next_offset)
        return text + "]"

    def with_budget(self, max_tokens: int) -> RankedPage:
        """This page under another budget (the budget shows in notices)."""
        return RankedPage(
            self.results, offset=self.offset, total_count=self.total, max_tokens=max_tokens,
            counter=self.counter, rendering=self.rendering,
        )  # fmt: skip

    def size(self, response: SearchResponse) -> int:
        return self.counter.count(response.to_text())


R = TypeVar("R", SearchResponse, ReadResponse)


def measure(response: R, counter: TokenCounter, known: Fitted | None = None) -> R:
    """`response` with `used_tokens` set to the count of its own rendering, and marked measured.

    `known` is the rendering the budget search already counted: in text, where the count is not
    part of the text, it is the answer (no second count). In JSON the count is part of what is
    counted: a few rounds find the value that stays the same once written (the search counted
    the widest value, the budget, so it fits).
    """
    if known is not None and response.format == "text":
        updated = response.model_copy(update={"used_tokens": known.tokens})
        return updated.with_measure(known.text, known.tokens)
    if response.format == "text":
        text = response.to_text()
        counted = counter.count(text)
        return response.model_copy(update={"used_tokens": counted}).with_measure(text, counted)
    seen: dict[int, tuple[R, str]] = {}

    def size_at(n: int) -> int:
        written = response.model_copy(update={"used_tokens": n})
        seen[n] = (written, written.to_text())
        return counter.count(seen[n][1])

    stated, counted = stated_count(size_at, response.used_tokens)
    response, text = seen[stated]
    return response.with_measure(text, counted)


def _count_until(counter: TokenCounter, texts: list[str], budget: int) -> list[int]:
    """Token counts of `texts` in rank order, counted until they add up past `budget`.

    The rest are left uncounted with `budget + 1`, which never fits: the budget stops at the
    first result that does not fit, and a text's rendered JSON does not count fewer tokens than
    the text in practice (the final count of the rendered response is what guarantees it).
    """
    lazy = LazyCounts(counter, texts)
    counts: list[int] = []
    total = 0
    while len(counts) < len(texts) and total <= budget:
        counts.append(lazy[len(counts)])
        total += counts[-1]
    return counts + [budget + 1] * (len(texts) - len(counts))


def _to_results(
    hits: Sequence[Hit], counter: TokenCounter, *, concise: bool, query: str, budget: int
) -> tuple[list[SearchResult], list[int], list[int]]:
    """The results, each text's token count, and a guess of what each costs inside the JSON
    (escaped), from the counts stored at ingest when they are in `counter`."""
    words = _query_words(query) if concise else []
    texts: list[str] = []
    spans: list[tuple[int, int]] = []
    for hit in hits:
        start, end = int(hit.metadata["start_line"]), int(hit.metadata["end_line"])
        text = hit.document
        if concise:
            text, start, end = snippet(text, start, words)
        texts.append(text)
        spans.append((start, end))
    stored = [h.metadata.get("tokens") for h in hits]
    in_json: list[int] | None = None
    if not concise and all(
        isinstance(n, int) and h.metadata.get("counter") == counter.name
        for n, h in zip(stored, hits, strict=True)
    ):
        tokens = [int(n) for n in stored if isinstance(n, int)]  # counted at ingest
        escaped = [h.metadata.get("json_tokens") for h in hits]
        if all(isinstance(n, int) for n in escaped):
            in_json = [int(n) for n in escaped if isinstance(n, int)]
    else:
        tokens = _count_until(counter, texts, budget)
    if in_json is None:  # not stored (another counter, or a store ingested before json_tokens)
        in_json = [n + _escapes(t) for n, t in zip(tokens, texts, strict=True)]
    results = [
        SearchResult(
            id=hit.id,
            source=str(hit.metadata["source"]),
            start_line=start,
            end_line=end,
            pages=cite(hit.metadata, text, start),
            score=None if concise else round(1.0 - hit.distance, 4),
            text=text,
            tokens=None if concise else n,
            cut=None if concise else False,
        )
        for hit, text, (start, end), n in zip(hits, texts, spans, tokens, strict=True)
    ]
    return results, tokens, in_json


def budget_response(
    hits: Sequence[Hit],
    *,
    query: str,
    offset: int,
    total_count: int,
    max_tokens: int,
    counter: TokenCounter,
    concise: bool,
    rendering: Rendering = TEXT,
) -> SearchResponse:
    """The best-ranked prefix of `hits` whose rendered response counts at most `max_tokens`."""
    results, _, in_json = _to_results(
        hits, counter, concise=concise, query=query, budget=max_tokens
    )
    page = RankedPage(
        results, offset=offset, total_count=total_count, max_tokens=max_tokens, counter=counter,
        rendering=rendering,
    )  # fmt: skip
    n = len(results)
    if n == 0:
        empty = page.assemble(0)
        if page.size(empty) > max_tokens:
            needed = least_budget(page.size(empty), lambda m: _size_at(page, m, 0))
            raise BudgetTooSmall(max_tokens, "an empty response here", needed)
        return measure(empty, counter)
    # A guess from stored counts: each text (as escaped in JSON, for JSON) plus its header or
    # fields, over the envelope of a response without results. The budget primitive then
    # counts the rendered response from that guess: one count when the guess is right.
    base = page.size(page.assemble(0))
    if rendering.format == "json":
        skeleton = results[0].model_copy(update={"text": ""}).model_dump_json(exclude_none=True)
        costs = [n + counter.count(skeleton) + 1 for n in in_json]
    else:
        prefix = shared_folder([r.source for r in results])  # as the rendering shows sources
        header = counter.count(results[0].header(offset + 1, prefix)) + 2  # one, as a guess
        costs = [(r.tokens or 0) + header for r in results]
    k, room = 0, max_tokens - base
    while k < n and costs[k] <= room:
        room -= costs[k]
        k += 1
    # Where even the stored counts of the texts alone, less a generous allowance for tokens
    # that merge across joins (two a result), pass the budget, no longer prefix can fit: the
    # search stops there, so a right guess costs one count. Headers and fields are left out of
    # this bound: they depend on which results show (the folder said once is the one the shown
    # sources share), so a guess of them could pass a prefix that fits.
    texts = in_json if rendering.format == "json" else [r.tokens or 0 for r in results]
    reach, spent = 0, base
    while reach < n and spent + texts[reach] - _JOIN_SLACK * (reach + 1) <= max_tokens:
        spent += texts[reach]
        reach += 1
    fitted = largest_prefix(
        lambda j: page.assemble(j).to_text(), max(reach, k, 1), max_tokens, counter, lower=1,
        guess=max(k, 1),
    )  # fmt: skip
    if fitted is not None:
        return measure(page.assemble(fitted.size), counter, fitted)
    return _cut_first(page, results[0])


def _size_at(page: RankedPage, budget: int, k: int, cut: SearchResult | None = None) -> int:
    """The size of the response keeping `k` results under another budget (it shows in the
    notice), for the least-budget advice."""
    other = page.with_budget(budget)
    return other.size(other.assemble(k, cut=cut))


def _cut_first(page: RankedPage, first: SearchResult) -> SearchResponse:
    """The top result cut to fit the budget with the rest of the response.

    The cut is measured as the whole response renders it, header, envelope and escaping
    included. The smallest such response holds the top result's header alone; a budget below
    that is an error that names the minimum.
    """

    def cut_at(kept: str) -> SearchResult:
        kept = kept.rstrip()
        return first.model_copy(
            update={
                "text": kept,
                "end_line": first.start_line + kept.count("\n"),
                "tokens": page.counter.count(kept) if first.tokens is not None else None,
                "cut": True if first.cut is not None else None,
            }
        )

    fitted = cut_text(
        first.text,
        page.max_tokens,
        page.counter,
        render=lambda kept: page.assemble(1, cut=cut_at(kept)).to_text(),
    )
    if fitted is None:
        empty = cut_at("")
        needed = page.size(page.assemble(1, cut=empty))
        least = least_budget(needed, lambda m: _size_at(page, m, 1, cut=empty))
        raise BudgetTooSmall(page.max_tokens, "the top result cut to nothing", least)
    return measure(page.assemble(1, cut=cut_at(first.text[: fitted.size])), page.counter, fitted)
