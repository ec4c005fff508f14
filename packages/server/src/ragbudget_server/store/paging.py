"""Search pages that partition one ranking: the first page ranks, later pages read.

Each search ranks every chunk matching its filters once (`rank_all`): Chroma's answer for the
whole list (so its approximate search leaves nothing out and every distance is exact), the
chunks it did not return (a filter can make HNSW miss some) added by their exact distance,
ties in rank order by id. The order is a function of the query and the store's content, so
`offset` pages are exact while the store does not change. A page that has more to show names
a cursor (`ragbudget_server.store.cursor`) that keeps that ranking: pages read by cursor never
repeat or skip a chunk, whatever other processes ingest meanwhile, and say when the store
changed since the first page. Chunks of the ranking deleted since are accounted on the page
that reaches them (`gone_ids`).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from ragbudget.counters import TokenCounter

from ragbudget_server.store import cursor as cursors
from ragbudget_server.store.errors import StoreError
from ragbudget_server.store.models import SearchResponse
from ragbudget_server.store.search import Fetch, Hit, Rendering, fetch_ranked, measure
from ragbudget_server.store.selection import respond

__all__ = ["continuation_hint", "rank_all", "search_page"]

_BATCH = 1000


def continuation_hint(offset_hint: str, key: str) -> str:
    """How a notice names the cursor that continues, in the form `offset_hint` names offsets
    (a shell's `--cursor K.N`, a tool's `cursor="K.N"`)."""
    if offset_hint.lstrip().startswith("--"):
        return f"--cursor {key}.{{offset}}"
    return f'cursor="{key}.{{offset}}"'


def rank_all(
    collection: Any, embedding: list[float], where: dict[str, Any] | None, total: int
) -> tuple[list[str], list[float]]:
    """Every chunk matching `where`, ranked by distance to `embedding` (ties by id)."""
    if total == 0:
        return [], []
    found = collection.query(
        query_embeddings=[embedding], n_results=total, where=where, include=["distances"]
    )
    pairs = dict(zip(found["ids"][0], map(float, found["distances"][0]), strict=True))
    if len(pairs) < total:
        matching = collection.get(where=where, include=[])["ids"]
        missing = [i for i in matching if i not in pairs]
        query = np.asarray(embedding, dtype=np.float64)
        for at in range(0, len(missing), _BATCH):
            got = collection.get(ids=missing[at : at + _BATCH], include=["embeddings"])
            vectors = np.asarray(got["embeddings"], dtype=np.float64)
            norms = np.linalg.norm(vectors, axis=1) * (np.linalg.norm(query) or 1.0)
            cosine = (vectors @ query) / np.where(norms == 0, 1.0, norms)
            pairs.update(zip(got["ids"], (1.0 - cosine).tolist(), strict=True))
    ranked = sorted(pairs.items(), key=lambda pair: (pair[1], pair[0]))
    return [i for i, _ in ranked], [d for _, d in ranked]


def search_page(
    backend: Any,
    *,
    query: str,
    where: dict[str, Any] | None,
    total: Callable[[], int],
    offset: int,
    cursor: str | None,
    limit: int,
    max_tokens: int,
    counter: TokenCounter,
    rendering: Rendering,
    records: Fetch,
    concise: bool,
    evidence: bool,
    max_per_source: int | None,
) -> SearchResponse:
    """One budgeted page of the ranking `cursor` names (else a new ranking, from `offset`)."""
    collection = backend.require()
    shelf = cursors.shelf_for(backend)
    version = backend.version()
    if cursor is not None:
        if offset:
            msg = f"give cursor or offset, not both (cursor={cursor!r}, offset={offset})"
            raise StoreError(msg)
        at = cursors.Cursor.parse(cursor)
        key, start, fresh = at.key, at.rank, False
        ranking = cursors.load(shelf, at, query=query, where=where)
    else:
        n = total()
        if offset and offset >= n:
            msg = f"offset {offset} is past the end: {n} results match"
            raise StoreError(msg)
        embedding = [float(x) for x in backend.embed([query], query=True)[0]]
        ids, distances = rank_all(collection, embedding, where, n)
        ranking = cursors.Ranking(query, where, version, ids, distances, time.time())
        key, start, fresh = cursors.new_key(query, where, version, ids), offset, True
    changed = ranking.version != version
    hint = continuation_hint(rendering.offset_hint, key)
    paged = Rendering.of(rendering.format, hint)

    def page(budget: int, check: bool) -> tuple[SearchResponse, list[str]]:
        first, window, gone = _window(collection, ranking, start, limit, check=check)
        pairs = [(ranking.ids[i], ranking.distances[i]) for i in window]
        hits = fetch_ranked(pairs, records, max_tokens=budget, concise=concise or evidence)
        if [h.id for h in hits] != [i for i, _ in pairs[: len(hits)]]:
            raise _Moved
        return _respond(hits, query, first, len(ranking.ids), budget, counter, paged,
                        concise, evidence, max_per_source), gone  # fmt: skip

    reserve = 0
    for _ in range(4):
        try:
            response, gone = page(max_tokens - reserve, changed)
        except _Moved:  # a chunk went between the check and the fetch: look again
            changed = True
            continue
        except StoreError as exc:
            raise _least(exc, max_tokens, reserve) from None
        final = _with_walk(response, key, changed, gone, counter)
        used = final.used_tokens
        if used <= max_tokens:
            if fresh and final.next_offset is not None:
                cursors.save(shelf, key, ranking)
            return final
        reserve += used - max_tokens + (reserve == 0) * _extra_guess(final, counter)
    msg = "the search page could not be fitted with its cursor; search again"
    raise StoreError(msg)


class _Moved(Exception):
    """A chunk of the window was deleted between the presence check and the fetch."""


def _respond(hits: list[Hit], query: str, offset: int, total: int, budget: int,
             counter: TokenCounter, rendering: Rendering, concise: bool, evidence: bool,
             max_per_source: int | None) -> SearchResponse:  # fmt: skip
    if budget < 1:
        msg = f"max_tokens={budget} cannot hold even an empty response here; use max_tokens >= 1"
        raise StoreError(msg)
    return respond(
        hits, query=query, offset=offset, total_count=total, max_tokens=budget, counter=counter,
        concise=concise, rendering=rendering, evidence=evidence, max_per_source=max_per_source,
    )  # fmt: skip


def _window(
    collection: Any, ranking: cursors.Ranking, start: int, limit: int, *, check: bool
) -> tuple[int, list[int], list[str]]:
    """The ranks a page may show from `start` (at most `limit`), the first of them, and the
    ids of the ranking gone from the store that the page accounts for (`check`: look).

    Ids gone at the window's start are passed over (accounted on this page); the window ends
    before the next one gone, which the next page passes over: so the ranks a page shows are
    consecutive and its `next_offset` is a rank of the ranking.
    """
    window = list(range(start, min(start + limit, len(ranking.ids))))
    gone: list[str] = []
    if check and window:
        present = set(collection.get(ids=[ranking.ids[i] for i in window], include=[])["ids"])
        while window and ranking.ids[window[0]] not in present:
            gone.append(ranking.ids[window.pop(0)])
        end = next((j for j, i in enumerate(window) if ranking.ids[i] not in present), None)
        window = window if end is None else window[:end]
    return (window[0] if window else start + len(gone)), window, gone


def _remark(changed: bool, gone: list[str]) -> str | None:
    if not changed:
        return None
    text = "[The store changed since this search's first page: its pages keep the ranking made then"
    if gone:
        text += f"; {len(gone)} of its chunks are gone (gone_ids)"
    return text + ". Search again without a cursor to include what changed]"


def _with_walk(
    response: SearchResponse, key: str, changed: bool, gone: list[str], counter: TokenCounter
) -> SearchResponse:
    """`response` with its cursor, what changed since the first page, and its new count."""
    remark = _remark(changed, gone)
    notice = response.notice
    if remark is not None:
        notice = remark if notice is None else f"{notice}\n{remark}"
    update = {
        "next_cursor": None if response.next_offset is None else f"{key}.{response.next_offset}",
        "store_changed": True if changed else None,
        "gone_ids": gone or None,
        "notice": notice,
        "max_tokens": response.max_tokens,
    }
    walked = response.model_copy(update=update)
    measured = response.measured()
    if response.format == "text" and notice == response.notice and measured is not None:
        return walked.with_measure(*measured)  # the text is the same: no recount
    return measure(walked, counter)


def _extra_guess(response: SearchResponse, counter: TokenCounter) -> int:
    """Tokens the walk's fields may add to a page (JSON), for the first retry."""
    fields = {"next_cursor": response.next_cursor, "store_changed": response.store_changed}
    return counter.count(json.dumps(fields)) + 2


def _least(exc: StoreError, asked: int, reserve: int) -> StoreError:
    """`exc` (a budget too small) with its figures for the budget asked, not the one given."""
    if not reserve:
        return exc
    text = re.sub(r"max_tokens=\d+", f"max_tokens={asked}", str(exc))
    text = re.sub(r"(>= |needs )(\d+)", lambda m: f"{m[1]}{int(m[2]) + reserve}", text)
    return StoreError(text)
