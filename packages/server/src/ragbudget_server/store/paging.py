"""Search pages that partition one ranking: the first page ranks, later pages read.

A search's ranking lives in a snapshot (`ragbudget_server.store.cursor`). The first page ranks
only what it can show: Chroma's top `offset + limit`, ids and distances, as a plain query
would, so its cost does not grow with the store. A page that reads past the snapshot's ranked
ids extends it (`extend`): Chroma's top list again, longer, with the ids already ranked left
out; when that yields nothing new (a coarse index or a filter makes HNSW miss chunks), every
remaining matching chunk ranked by its exact distance, once, so the walk covers the whole
store. Ties are ordered by id. A page that has more to show names a cursor that reads that
snapshot: pages read by cursor never repeat or skip a chunk, whatever other processes ingest
meanwhile, and say when the store changed since the first page. Chunks of the ranking deleted
since are accounted on the page that reaches them (`gone_ids`). `offset` pages of the same
search read the same snapshot, so they are exact while the store does not change and the
snapshot lives (an hour); after that an offset page ranks afresh.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from ragbudget.counters import TokenCounter

from ragbudget_server.store import cursor as cursors
from ragbudget_server.store.errors import BudgetTooSmall, StoreError
from ragbudget_server.store.hybrid import (
    LEXICAL_POOL,
    POOL,
    Propose,
    cosine_distances,
    decided,
    seed,
)
from ragbudget_server.store.models import SearchResponse
from ragbudget_server.store.search import (
    Fetch,
    Hit,
    Rendering,
    fetch_ranked,
    first_batch,
    measure,
)
from ragbudget_server.store.selection import respond

__all__ = [
    "continuation_hint",
    "extend",
    "freeze_cursors",
    "ranking_for",
    "save_ranking",
    "search_page",
]

logger = logging.getLogger(__name__)

_BATCH = 1000
_STEP = 64
"""Fewest candidates an extension asks Chroma for; each asks for at least twice the ranked."""


def continuation_hint(offset_hint: str, key: str) -> str:
    """How a notice names the cursor that continues, in the form `offset_hint` names offsets
    (a shell's `--cursor K.N`, a tool's `cursor="K.N"`)."""
    if offset_hint.lstrip().startswith("--"):
        return f"--cursor {key}.{{offset}}"
    return f'cursor="{key}.{{offset}}"'


def extend(
    collection: Any,
    ranking: cursors.Ranking,
    embedding: Callable[[], list[float]],
    upto: int,
    total: Callable[[], int],
    records: dict[str, tuple[str, dict[str, Any]]] | None = None,
) -> cursors.Ranking:
    """`ranking` with at least `upto` ranked ids, or complete.

    `records`: the first query also returns the texts and metadata of what it ranks, kept
    there (`{id: (document, metadata)}`), for a page that will read them all: one query
    instead of a query and a fetch.

    Chroma's top list for the query, longer each time (`first`: exactly `upto`, the size of a
    plain query; then twice what is ranked, at least `_STEP`, so the ids an extension adds
    depend only on what was ranked, not on the page asking), minus the ids ranked already (and,
    once an ingest recorded them, minus the chunks that did not match at the first page). Each
    list is asked for one more, and its last chunks as distant as that one are left to the next
    list (`hybrid.decided`: which of equally distant chunks a list ends with is the index's
    chance). When a list brings nothing new or covers every matching chunk: all the rest, by
    exact distance, ties by id.
    """
    ids, distances = list(ranking.ids), list(ranking.distances)
    ranked = set(ids)
    members = None if ranking.members is None else set(ranking.members)
    upto = min(upto, ranking.end)
    query: list[float] | None = None
    while len(ids) < upto and not ranking.complete:
        query = query or embedding()
        matching = total()
        ask = min(matching, upto if not ids else max(_STEP, 2 * len(ids)))
        if ask <= 0:
            return replace(ranking, ids=ids, distances=distances, complete=True)
        full = records is not None and not ids
        include = ["distances", "documents", "metadatas"] if full else ["distances"]
        found = collection.query(
            query_embeddings=[query], n_results=min(ask + 1, matching), where=ranking.where,
            include=include,
        )  # fmt: skip
        if full and records is not None:
            rows = zip(found["ids"][0], found["documents"][0], found["metadatas"][0], strict=True)
            records.update((i, (d or "", dict(m or {}))) for i, d, m in rows)
        new = [(d, i) for d, i in decided(found, ask)
               if i not in ranked and (members is None or i in members)]  # fmt: skip
        ids += [i for _, i in new]
        distances += [d for d, _ in new]
        ranked.update(i for _, i in new)
        ranking = replace(ranking, ids=ids, distances=distances)
        if len(ids) < upto and (not new or ask >= matching):
            return _rank_rest(collection, ranking, query, ranked, members)
    return ranking


def _rank_rest(
    collection: Any,
    ranking: cursors.Ranking,
    query: list[float],
    ranked: set[str],
    members: set[str] | None,
) -> cursors.Ranking:
    """`ranking` completed: every matching chunk not ranked yet, by exact cosine distance (the
    collections are cosine), ties by id; then the recorded members gone since (to account)."""
    matching = collection.get(where=ranking.where, include=[])["ids"]
    rest = [i for i in matching if i not in ranked and (members is None or i in members)]
    scored: list[tuple[float, str]] = []
    for at in range(0, len(rest), _BATCH):
        got = collection.get(ids=rest[at : at + _BATCH], include=["embeddings"])
        scored += zip(cosine_distances(got["embeddings"], query), got["ids"], strict=True)
    scored.sort()
    ids = ranking.ids + [i for _, i in scored]
    distances = ranking.distances + [d for d, _ in scored]
    if members is not None:  # recorded, now gone: the page that reaches them accounts for them
        gone = sorted(members - ranked - set(matching))
        ids += gone
        distances += [float("inf")] * len(gone)
    return replace(ranking, ids=ids, distances=distances, complete=True)


def save_ranking(backend: Any, key: str, ranking: cursors.Ranking) -> None:
    """Keep `ranking` (grown by a page) where every process of the store reads it."""
    cursors.save(cursors.shelf_for(backend), key, ranking)


def freeze_cursors(backend: Any) -> None:
    """Before an ingest: each live snapshot not yet complete records the ids that match its
    filters now (`cursor.freeze`), so its walk keeps to the chunks of its first page's store."""
    collection = backend.require()

    def matching(where: dict[str, Any] | None) -> list[str]:
        return list(collection.get(where=where, include=[])["ids"])

    try:
        frozen = cursors.freeze(cursors.shelf_for(backend), backend.version(), matching)
    except OSError as exc:  # the walks then say the store changed and may see new chunks
        logger.warning("could not record the search cursors' chunks before ingesting: %s", exc)
        return
    if frozen:
        logger.debug("recorded the matching chunks of %d search cursors", frozen)


def ranking_for(
    backend: Any,
    *,
    query: str,
    where: dict[str, Any] | None,
    total: Callable[[], int],
    offset: int,
    cursor: str | None,
    limit: int,
    records: dict[str, tuple[str, dict[str, Any]]] | None = None,
    lexical: Propose | None = None,
) -> tuple[str, cursors.Ranking, int, bool, str]:
    """The snapshot a page reads, extended to hold ranks `start` to `start + limit`: its key,
    the ranking, `start`, whether it grew past what is kept, and the store's version now.

    With `lexical` (hybrid search), a new ranking starts with the fusion of the dense and the
    lexical rankings (`hybrid.seed`); its snapshot has a key of its own.

    A new snapshot is kept at once, unless another process kept one under its key first: then
    the page reads theirs (two first pages of one search read one ranking)."""
    collection = backend.require()
    shelf = cursors.shelf_for(backend)
    version = backend.version()
    found: cursors.Ranking | None
    if cursor is not None:
        if offset:
            msg = f"give cursor or offset, not both (cursor={cursor!r}, offset={offset})"
            raise StoreError(msg)
        at = cursors.Cursor.parse(cursor)
        key, start = at.key, at.rank
        found = cursors.load(shelf, at, query=query, where=where)
    else:
        kind = version if lexical is None else f"{version}+lexical"
        key, start = cursors.new_key(query, where, kind), offset
        found = cursors.find(shelf, key)
        if found is not None and (found.query != query or found.where != where):
            found, key = None, cursors.new_key(query, where, f"{kind}-{time.time()}")
        if found is not None and offset and offset >= found.end:
            msg = f"offset {offset} is past the end: {found.end} results match"
            raise StoreError(msg)
    fresh = found is None
    if found is None:
        n = total()
        if offset and offset >= n:
            msg = f"offset {offset} is past the end: {n} results match"
            raise StoreError(msg)
        found = cursors.Ranking(query, where, version, [], [], time.time(), total=n)

    embedded: list[list[float]] = []

    def embedding() -> list[float]:  # embedded once a page (the fusion and the extension ask)
        if not embedded:
            embedded.append([float(x) for x in backend.embed([query], query=True)[0]])
        return embedded[0]

    if fresh and lexical is not None:
        proposal = lexical(query, LEXICAL_POOL, where, version)
        if proposal is not None:
            found = seed(collection, found, embedding, proposal, POOL)
    first_total = found.total if found.version == version else None

    def count() -> int:  # what matches now (known while the store is the first page's)
        return first_total if first_total is not None else total()

    ranking = extend(collection, found, embedding, start + limit, count, records)
    if fresh:
        if shelf.put_new(key, ranking.encode()):
            return key, ranking, start, False, version
        kept = cursors.find(shelf, key)  # another process ranked it first: read theirs
        if kept is not None:
            found = kept
            ranking = extend(collection, kept, embedding, start + limit, count)
    grew = len(ranking.ids) > len(found.ids) or ranking.complete != found.complete
    return key, ranking, start, grew, version


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
    lexical: Propose | None = None,
) -> SearchResponse:
    """One budgeted page of the ranking `cursor` names (else a new ranking, from `offset`;
    hybrid with `lexical`)."""
    collection = backend.require()
    # A page that reads every record of its window (the evidence selection, snippets, or a
    # window the first fetch covers anyway) has a new ranking's query return them.
    read_all = concise or evidence or limit <= first_batch(max_tokens)
    prefetched: dict[str, tuple[str, dict[str, Any]]] | None = {} if read_all else None
    key, ranking, start, grew, version = ranking_for(
        backend, query=query, where=where, total=total, offset=offset, cursor=cursor,
        limit=limit, records=prefetched, lexical=lexical,
    )  # fmt: skip
    if prefetched:
        records = _reading_first(prefetched, records)
    changed = ranking.version != version
    hint = continuation_hint(rendering.offset_hint, key)
    # Every try states the budget asked (a try with the walk's fields held back in reserve is
    # fitted to less): one budget in the notice and the JSON, with no rewriting after.
    paged = Rendering.of(rendering.format, hint, rendering.stated(max_tokens))
    fetched: dict[str, tuple[str, dict[str, Any]]] = {}

    def remembered(ids: list[str]) -> dict[str, tuple[str, dict[str, Any]]]:
        """`records`, each id asked of Chroma once a page: a try with a smaller budget reads
        the records its first try fetched (a JSON page's cursor fields can take one)."""
        new = [i for i in ids if i not in fetched]
        if new:
            fetched.update(records(new))
        return {i: fetched[i] for i in ids if i in fetched}

    def page(budget: int, check: bool) -> tuple[SearchResponse, list[str]]:
        first, window, gone = _window(collection, ranking, start, limit, check=check)
        pairs = [(ranking.ids[i], ranking.distances[i]) for i in window]
        hits = fetch_ranked(pairs, remembered, max_tokens=budget, concise=concise or evidence)
        if [h.id for h in hits] != [i for i, _ in pairs[: len(hits)]]:
            raise _Moved
        return _respond(hits, query, first, ranking.end, budget, counter, paged,
                        concise, evidence, max_per_source), gone  # fmt: skip

    reserve = 0
    for _ in range(4):
        try:
            response, gone = page(max_tokens - reserve, changed)
        except _Moved:  # a chunk went between the check and the fetch: look again
            changed = True
            fetched.clear()
            continue
        except StoreError as exc:
            raise _least(exc, max_tokens, reserve) from None
        final = _with_walk(response, key, changed, gone, counter)
        used = final.used_tokens
        if used <= max_tokens:
            if grew:
                save_ranking(backend, key, ranking)
            return final
        # Keep back at least what the walk's fields added to this page: a page smaller than
        # its budget would otherwise come back the same while the reserve grows by the excess.
        more = reserve + used - max_tokens + (reserve == 0) * _extra_guess(final, counter)
        reserve = max(more, used - response.used_tokens)
    msg = "the search page could not be fitted with its cursor; search again"
    raise StoreError(msg)


def _reading_first(known: dict[str, tuple[str, dict[str, Any]]], fetch: Fetch) -> Fetch:
    """`fetch`, answering from the records `known` before asking the store."""

    def records(ids: list[str]) -> dict[str, tuple[str, dict[str, Any]]]:
        found = {i: known[i] for i in ids if i in known}
        missing = [i for i in ids if i not in found]
        return {**found, **fetch(missing)} if missing else found

    return records


class _Moved(Exception):
    """A chunk of the window was deleted between the presence check and the fetch."""


def _respond(hits: list[Hit], query: str, offset: int, total: int, budget: int,
             counter: TokenCounter, rendering: Rendering, concise: bool, evidence: bool,
             max_per_source: int | None) -> SearchResponse:  # fmt: skip
    if budget < 1:
        raise BudgetTooSmall(budget, "an empty response here", 1)
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
    response: SearchResponse,
    key: str,
    changed: bool,
    gone: list[str],
    counter: TokenCounter,
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
    if not reserve or not isinstance(exc, BudgetTooSmall):
        return exc
    return exc.for_ask(asked, reserve)
