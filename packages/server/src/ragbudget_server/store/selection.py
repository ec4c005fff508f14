"""Search answers with more evidence per token: the core's evidence selection on ranked hits.

Adjacent and overlapping chunks of one file become one result under one header (the 64-token
overlaps shown once), near-duplicate texts leave, an optional cap per file applies, and when
the budget cannot hold the results it should show (`min(10, max_tokens // 150)` in text,
`// 250` in JSON), each result gets a fair share and one larger than its share shows its
lines that best match the query.
The plain ranked prefix is the floor: every result it would show is shown (maybe cut). The
rendered response (`SearchResponse.to_text()`, header, notice and envelope included) is what
is measured against the budget, as in `budget_response`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from ragbudget.budget import rank_chunks
from ragbudget.counters import TokenCounter, count_up_to, stops_early
from ragbudget.evidence import EvidenceReport, EvidenceResult, dedupe, select
from ragbudget.fitting import Fitted, largest_fitting
from ragbudget.models import Chunk

from ragbudget_server.store.errors import StoreError
from ragbudget_server.store.models import SearchResponse, SearchResult
from ragbudget_server.store.pages import cite
from ragbudget_server.store.search import TEXT, Hit, RankedPage, Rendering, budget_response, measure

__all__ = ["Remembered", "evidence_response", "respond"]

_MIN_SHARE = {"text": 150, "json": 250}
"""The least budget a result should get (`select`'s `min_share`), by format: a result's header
(text) or fields (JSON, escaped) cost about 25 or 45 tokens, and smaller shares would spend
more on them than on evidence (`benchmarks/bench_evidence.py` measures both)."""
_TRIES = 6
"""Selections a page may take: a narrower reach, or the excess taken off the budget."""
_DEDUPE = 0.9
"""The similarity at which a text repeats a better-ranked one (`select`'s default)."""


def respond(
    hits: Sequence[Hit],
    *,
    concise: bool,
    evidence: bool = True,
    max_per_source: int | None = None,
    **page: Any,
) -> SearchResponse:
    """The search's answer: `evidence_response` when `evidence` (and not `concise`), else the
    plain ranked prefix (`budget_response`); `page` is what both take (query, offset,
    total_count, max_tokens, counter, rendering). `max_per_source` (with `evidence`) caps the
    results per file; None: no cap."""
    if max_per_source is not None and (
        type(max_per_source) is not int or not 1 <= max_per_source <= 1000
    ):
        msg = f"max_per_source must be an integer from 1 to 1000 or None, got {max_per_source!r}"
        raise StoreError(msg)
    if evidence and not concise:
        return evidence_response(hits, max_per_source=max_per_source, **page)
    return budget_response(hits, concise=concise, **page)


def evidence_response(
    hits: Sequence[Hit],
    *,
    query: str,
    offset: int,
    total_count: int,
    max_tokens: int,
    counter: TokenCounter,
    max_per_source: int | None = None,
    rendering: Rendering = TEXT,
) -> SearchResponse:
    """The most distinct evidence among `hits` (ranked) whose rendered response counts at most
    `max_tokens`; `budget_response`'s answer when nothing can be gained (no hits, or the budget
    cannot hold even one result's share).

    Pages stay a partition of the ranking: a page accounts for a run of ranks from its offset
    (each shown, merged into a shown span, or left out as a duplicate of a shown text; or
    left out by the cap per file, said in `capped_ids`) and `next_offset` is the first rank
    after that run. Should the selection show, merge or dedupe a chunk ranked past the first
    one it had to leave out, it runs again on the hits before that one, so that the next page
    never repeats what this one showed; then the run widens again while a selection leaves no
    rank of it out.
    """

    def plain() -> SearchResponse:
        """The plain ranked prefix, where the evidence selection gains nothing; with a cap per
        file, of the ranks before the first one the cap would leave out (the next page starts
        there, so pages still partition the ranking and no page passes the cap)."""
        return budget_response(
            _within_cap(hits, max_per_source), query=query, offset=offset,
            total_count=total_count, max_tokens=max_tokens, counter=counter, concise=False,
            rendering=rendering,
        )  # fmt: skip

    if not hits:
        return plain()
    by_id = {h.id: h for h in hits}
    # Unscored: `select` keeps them in rank order (a hybrid ranking is not by distance); a
    # result's score is still its hit's (`_result`).
    chunks = [Chunk(id=h.id, text=h.document, metadata=h.metadata) for h in hits]
    page = RankedPage(
        [], offset=offset, total_count=total_count, max_tokens=max_tokens, counter=counter,
        rendering=rendering,
    )  # fmt: skip
    rank = {h.id: i for i, h in enumerate(hits)}
    more = offset + len(hits) < total_count

    # Inside the selection, each candidate is rendered with the longest notice it could get
    # (truncated, a result cut, continuing after the last hit); the real notice is set after,
    # and the response measured again. Should it count more, the selection runs again with
    # the excess taken off what it used: taken off the budget alone, a selection that left
    # part of it unused came back nearly the same, and a page could use up its tries and fall
    # back to the plain prefix, fewer results, on a few tokens' difference (issue 51).
    drawn: dict[tuple[Any, ...], SearchResult] = {}  # each candidate result built once

    def render(kept: list[Chunk]) -> str:
        results = []
        for c in kept:
            key = (c.id, c.text, c.score, c.metadata.get("start_line"), c.metadata.get("end_line"))
            result = drawn.get(key)
            if result is None:
                hit = by_id[c.id]
                result = drawn[key] = _result(c, hit, counter, exact=False, cut=_shorter(c, hit))
            results.append(result)
        longest = max(results, key=_id_length, default=None)
        return page.response(results, longest, offset + len(hits), True).to_text()

    budget, reach, narrowed = max_tokens, len(hits), False
    remembered = Remembered(counter)  # the tries render many of the same candidates
    # The tries select from prefixes of one ranking, and which texts repeat a better-ranked
    # one does not depend on the ranks after them: so duplicates are found once, for all hits,
    # and each try selects from the distinct texts of its prefix (as `select` would find them).
    distinct, repeats = _distinct(chunks)
    cuts: dict[Any, Any] = {}  # and the snippets one try cut, the next reuses

    def attempt(k: int) -> EvidenceResult | None:
        try:
            got = select(
                [c for c in distinct if rank[c.id] < k] if repeats is not None else chunks[:k],
                budget, counter=remembered, query=query, render=render,
                max_per_source=max_per_source, min_share=_MIN_SHARE[rendering.format],
                dedupe_threshold=None if repeats is not None else _DEDUPE, cuts=cuts,
            )  # fmt: skip
        except ValueError:
            return None  # not even an empty rendering fits: the plain path says what is needed
        if repeats is None:
            return got
        deduped = {gone: twin for gone, twin in repeats.items() if rank[gone] < k}
        report = got.report.model_copy(update={"deduped": deduped})
        return got.model_copy(update={"report": report})

    for _ in range(_TRIES):
        got = attempt(reach)
        if got is None or not got.chunks:
            break
        report = got.report
        left = min((rank[i] for i in report.dropped_ids), default=None)
        if left is not None and _reaches_past(report, rank, left):
            reach, narrowed = left, True  # the page ends before `left`: nothing past it shown
            continue
        if left is None and narrowed:  # the narrower page may leave budget for more ranks
            reach, got = _widest(attempt, reach, len(hits), got, budget)
            narrowed, report = False, got.report
        covered = reach if left is None else left
        next_offset = offset + covered if covered < len(hits) or more else None
        cut = set(report.cut_ids)
        twins, capped = _duplicates(report)
        results = [
            _result(
                c, by_id[c.id], counter, exact=True, cut=c.id in cut,
                merged=report.merged.get(c.id), duplicates=twins.get(c.id),
            )
            for c in got.chunks
        ]  # fmt: skip
        first_cut = next((r for r in results if r.cut), None)
        response = page.response(
            results, first_cut, next_offset, covered < len(hits) or bool(cut), covered=covered,
            capped=sorted((i for i in capped if rank[i] < covered), key=rank.__getitem__),
        )  # fmt: skip
        text = response.to_text()
        size = counter.count(text)
        if size <= max_tokens:
            return measure(response, counter, Fitted(len(results), text, size))
        budget = min(budget, report.used_tokens) - (size - max_tokens)
        if budget <= 0:
            break
    return plain()


def _distinct(chunks: list[Chunk]) -> tuple[list[Chunk], dict[str, str] | None]:
    """`chunks` without duplicates and `{left-out id: the id it repeats}` (`dedupe`), when
    `select` ranks them in the order given (else None: each try dedupes its own prefix)."""
    if rank_chunks(chunks) != list(range(len(chunks))):
        return chunks, None
    return dedupe(chunks, threshold=_DEDUPE)


def _within_cap(hits: Sequence[Hit], cap: int | None) -> Sequence[Hit]:
    """The ranks of `hits` before the first one past `cap` results of its file."""
    if cap is None:
        return hits
    seen: Counter[object] = Counter()
    for at, hit in enumerate(hits):
        source = hit.metadata.get("source")
        seen[source] += 1
        if seen[source] > cap:
            return hits[:at]
    return hits


def _widest(
    attempt: Callable[[int], EvidenceResult | None],
    reach: int,
    upper: int,
    got: EvidenceResult,
    budget: int,
) -> tuple[int, EvidenceResult]:
    """The largest reach in `[reach, upper]` whose selection leaves no rank out (`reach`'s,
    `got`, does), and its selection. The search starts where the budget `got` left would reach
    at the tokens a rank took so far (each selection counts a whole page: a guess close to the
    answer saves most of them)."""
    tried = {reach: got}
    used = got.report.used_tokens
    guess = reach + max(1, (budget - used) * reach // max(used, 1))

    def whole(k: int) -> bool:
        if k not in tried:
            found = attempt(k)
            if found is None or found.report.dropped_ids or not found.chunks:
                return False
            tried[k] = found
        return True

    best = largest_fitting(whole, upper, lower=reach, guess=guess) or reach
    return best, tried[best]


class Remembered:
    """`counter`, each text counted once: the selection's tries render the same candidates, and
    the MCP server's fitting measures the same texts again (`mcp.answers`)."""

    def __init__(self, counter: TokenCounter) -> None:
        self._counter = counter
        self._seen: dict[str, int] = {}
        self._over: dict[str, tuple[int, int]] = {}
        """Texts found over a limit: `(the limit, what the count said)`."""
        self.name, self.exact = counter.name, counter.exact
        self.stops_early = stops_early(counter)

    def count(self, text: str) -> int:
        n = self._seen.get(text)
        if n is None:
            n = self._seen[text] = self._counter.count(text)
        return n

    def count_up_to(self, text: str, limit: int) -> int:
        """As `count` when the text counts at most `limit`, else some number above it: a
        counter that can stop there does (`counters.count_up_to`). A text found over a limit
        is over every smaller one: the tries of a page check the same long renderings against
        one budget, and only the ones that fit are counted whole."""
        n = self._seen.get(text)
        if n is not None:
            return n
        over = self._over.get(text)
        if over is not None and limit <= over[0]:
            return over[1]
        n = count_up_to(self._counter, text, limit)
        if n <= limit:
            self._seen[text] = n
        else:
            self._over[text] = (limit, n)
        return n


def _reaches_past(report: EvidenceReport, rank: dict[str, int], left: int) -> bool:
    """Whether the selection showed, merged or deduped a hit ranked after `left`."""
    taken = [
        *report.kept_ids,
        *report.deduped,
        *(m for members in report.merged.values() for m in members),
    ]
    return any(rank[i] > left for i in taken)


def _duplicates(report: EvidenceReport) -> tuple[dict[str, list[str]], list[str]]:
    """Each shown id -> the ids left out as duplicates of its text (or of a chunk merged into
    its span), and the ids the cap left out (with the duplicates of capped chunks)."""
    owner = {k: k for k in report.kept_ids}
    owner.update({m: k for k, members in report.merged.items() for m in members})
    twins: dict[str, list[str]] = {}
    capped = list(report.capped_ids)
    for gone, twin in report.deduped.items():
        if twin in owner:
            twins.setdefault(owner[twin], []).append(gone)
        else:  # a duplicate of a chunk the cap left out
            capped.append(gone)
    return twins, capped


def _result(
    chunk: Chunk,
    hit: Hit,
    counter: TokenCounter,
    *,
    exact: bool,
    cut: bool = False,
    merged: list[str] | None = None,
    duplicates: list[str] | None = None,
) -> SearchResult:
    """The result showing `chunk` (a hit, a merged span, or a part of either)."""
    meta = chunk.metadata
    tokens = hit.metadata.get("tokens")
    if chunk.text != hit.document or not isinstance(tokens, int):
        # While selecting, the stored count stands in (JSON shows a number of about its width).
        tokens = counter.count(chunk.text) if exact or not isinstance(tokens, int) else tokens
    return SearchResult(
        id=chunk.id,
        source=str(meta["source"]),
        start_line=int(meta["start_line"]),
        end_line=int(meta["end_line"]),
        pages=cite(hit.metadata, chunk.text, int(meta["start_line"])),
        score=round(chunk.score if chunk.score is not None else 1.0 - hit.distance, 4),
        text=chunk.text,
        tokens=tokens,
        cut=cut,
        merged_ids=merged or None,
        duplicate_ids=duplicates,
    )


def _id_length(result: SearchResult) -> int:
    return len(result.id)


def _shorter(chunk: Chunk, hit: Hit) -> bool:
    return len(chunk.text) < len(hit.document)
