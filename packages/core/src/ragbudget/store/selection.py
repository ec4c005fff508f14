"""Search answers with more evidence per token: the core's evidence selection on ranked hits.

Adjacent and overlapping chunks of one file become one result under one header (the 64-token
overlaps shown once), near-duplicate texts leave, an optional cap per file applies, and when
the budget cannot hold the results it should show (`min(10, max_tokens // 100)`), each result
gets a fair share and one larger than its share shows its lines that best match the query.
The plain ranked prefix is the floor: every result it would show is shown (maybe cut). The
rendered response (`SearchResponse.to_text()`, header, notice and envelope included) is what
is measured against the budget, as in `budget_response`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ragbudget.counters import TokenCounter
from ragbudget.evidence import select
from ragbudget.models import Chunk
from ragbudget.store.errors import StoreError
from ragbudget.store.models import SearchResponse, SearchResult
from ragbudget.store.search import TEXT, Hit, Rendering, _Page, budget_response, measure

__all__ = ["evidence_response", "respond"]

_ROUNDS = 3


def respond(
    hits: Sequence[Hit],
    *,
    concise: bool,
    evidence: bool = False,
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
    cannot hold even one result's share)."""
    if not hits:
        return budget_response(
            hits, query=query, offset=offset, total_count=total_count, max_tokens=max_tokens,
            counter=counter, concise=False, rendering=rendering,
        )  # fmt: skip
    by_id = {h.id: h for h in hits}
    chunks = [
        Chunk(id=h.id, text=h.document, score=1.0 - h.distance, metadata=h.metadata) for h in hits
    ]
    page = _Page(
        [], offset=offset, total_count=total_count, max_tokens=max_tokens, counter=counter,
        rendering=rendering,
    )  # fmt: skip
    # Inside the selection, each candidate is rendered with the longest notice it could get
    # (truncated, a result cut, continuing after the last hit); the real notice is set after,
    # and the response measured again. Should it count more, the selection runs again with
    # the excess taken off the budget.
    rank = {h.id: i for i, h in enumerate(hits)}
    budget = max_tokens
    for _ in range(_ROUNDS):

        def render(kept: list[Chunk]) -> str:
            results = [
                _result(c, by_id[c.id], counter, exact=False, cut=_shorter(c, by_id[c.id]))
                for c in kept
            ]
            longest = max(results, key=_id_length, default=None)
            return page.response(results, longest, offset + len(hits), True).to_text()

        try:
            got = select(
                chunks, budget, counter=counter, query=query, render=render,
                max_per_source=max_per_source,
            )  # fmt: skip
        except ValueError:
            break  # not even an empty rendering fits: the plain path says what is needed
        if not got.chunks:
            break
        report = got.report
        cut = set(report.cut_ids)
        results = [
            _result(c, by_id[c.id], counter, exact=True, cut=c.id in cut) for c in got.chunks
        ]
        left = [rank[i] for i in [*report.dropped_ids, *report.capped_ids]]
        more = offset + len(hits) < total_count
        next_offset = offset + min(left) if left else (offset + len(hits) if more else None)
        truncated = bool(left or cut or report.deduped)
        first_cut = next((r for r in results if r.cut), None)
        response = page.response(results, first_cut, next_offset, truncated)
        if counter.count(response.to_text()) <= max_tokens:
            return measure(response, counter)
        budget -= counter.count(response.to_text()) - max_tokens
        if budget <= 0:
            break
    return budget_response(
        hits, query=query, offset=offset, total_count=total_count, max_tokens=max_tokens,
        counter=counter, concise=False, rendering=rendering,
    )  # fmt: skip


def _result(
    chunk: Chunk, hit: Hit, counter: TokenCounter, *, exact: bool, cut: bool = False
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
        score=round(chunk.score if chunk.score is not None else 1.0 - hit.distance, 4),
        text=chunk.text,
        tokens=tokens,
        cut=cut,
    )


def _id_length(result: SearchResult) -> int:
    return len(result.id)


def _shorter(chunk: Chunk, hit: Hit) -> bool:
    return len(chunk.text) < len(hit.document)
