"""Hybrid ranking: the dense (vector) ranking and the lexical (BM25) one, fused by reciprocal
rank fusion, and the lexical index kept in step with the store.

A new search's ranking starts with the fusion of two pools (`seed`): Chroma's `POOL` nearest
chunks and the lexical index's `LEXICAL_POOL` best BM25 matches, whatever the page asks, so
that the ranking does not depend on which page came first. Each chunk scores
`sum 1 / (RRF_K + rank)` over the lists it is in (Cormack, Clarke and Buettcher, SIGIR 2009,
with their k = 60): no score scales to calibrate, a chunk both lists rank well comes first, and
one only the words find (an identifier, a rare word, a CJK phrase the hashing embedding does not
see) still enters. Ties go to the better lexical rank, then the better dense rank, then the
id: in a tie the exact words outweigh the vectors (on the benchmark's questions this put the
answering file first as often or more often than the other order). Past the fused prefix the
ranking continues by dense distance (`paging.extend`) and covers every matching chunk once, as
before; the snapshot keeps the fused ranking, so cursor pages partition it.

A chunk only the index proposes gets its cosine distance from the vector the index keeps of it
(copied from Chroma at sync), so a result's score means what it always meant. When the index
is not in step with the store's version (an ingest running in another process, or one cut
short) or a filter's shape is not one it knows, Chroma checks the proposed ids instead: they
exist, pass the filters, and get Chroma's own distance.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np

from ragbudget_server.store import cursor as cursors
from ragbudget_server.store.lexical import LexicalIndex, Proposal, index_path

__all__ = [
    "LEXICAL_POOL",
    "POOL",
    "RRF_K",
    "after_ingest",
    "before_ingest",
    "cosine_distances",
    "decided",
    "index_for",
    "lexical_state",
    "proposer",
    "rrf",
    "seed",
]

logger = logging.getLogger(__name__)

POOL = 50
"""Candidates the vectors bring to the fusion, whatever the page size: so a search ranks the
same whichever page came first (a first page of 10 and one of 50 make the same snapshot)."""
LEXICAL_POOL = 20
"""Candidates the lexical index brings (past 20, a rank adds less than 1/80 to a score; on the
benchmark's questions 10, 20 and 50 put the same files first)."""
RRF_K = 60

Propose = Callable[[str, int, "dict[str, Any] | None", str], "Proposal | None"]


def rrf(rankings: list[list[str]], k: int = RRF_K) -> list[str]:
    """Ids ranked by reciprocal rank fusion; ties by rank in the first ranking, then in the
    next ones (an id absent from a ranking after those in it), then by id."""
    score: dict[str, float] = {}
    for ranking in rankings:
        for rank, id_ in enumerate(ranking, start=1):
            score[id_] = score.get(id_, 0.0) + 1.0 / (k + rank)
    ranks = [{id_: rank for rank, id_ in enumerate(ranking)} for ranking in rankings]
    return sorted(score, key=lambda i: (-score[i], *(r.get(i, len(r)) for r in ranks), i))


def decided(found: dict[str, Any], ask: int) -> list[tuple[float, str]]:
    """Chroma's top list `found` (asked for `ask + 1`, or for every matching chunk) as
    `(distance, id)` pairs by distance, then id: the nearest `ask`, less the ones as distant as
    the one past them. Which of several equally distant chunks a top list ends with differs
    from one index build to another (the hashing embedding puts every chunk sharing no word
    with the query at distance 1.0): five stores built from the same files ranked five ways
    (issue 51). Those are left to a longer list, or to the exact ranking of the rest, ties by
    id; so a ranking is the same on every store holding the same chunks."""
    pairs = sorted(zip(map(float, found["distances"][0]), found["ids"][0], strict=True))
    if len(pairs) <= ask:
        return pairs  # the whole list: nothing left out at its end
    last = pairs[ask][0]
    return [pair for pair in pairs[:ask] if pair[0] < last]


def cosine_distances(vectors: Any, query: list[float]) -> list[float]:
    """Cosine distance of each row of `vectors` to `query` (the collections are cosine)."""
    vector = np.asarray(query, dtype=np.float64)
    rows = np.asarray(vectors, dtype=np.float64)
    rows = rows.reshape(-1, vector.size)
    norms = np.linalg.norm(rows, axis=1) * (np.linalg.norm(vector) or 1.0)
    cosine = (rows @ vector) / np.where(norms == 0, 1.0, norms)
    return [float(d) for d in (1.0 - cosine).tolist()]


def seed(
    collection: Any,
    ranking: cursors.Ranking,
    embedding: Callable[[], list[float]],
    proposal: Proposal,
    pool: int,
) -> cursors.Ranking:
    """A new `ranking` (nothing ranked yet) started with the fusion of Chroma's `pool` nearest
    chunks and the lexical index's `proposal` (its best `pool`)."""
    ask = min(pool, ranking.total)
    if ask <= 0:
        return ranking
    query = embedding()
    found = collection.query(
        query_embeddings=[query], n_results=min(ask + 1, ranking.total), where=ranking.where,
        include=["distances"],
    )  # fmt: skip
    pairs = decided(found, ask)
    distance = {i: d for d, i in pairs}
    dense = [i for _, i in pairs]
    vectors = dict(zip(proposal.ids, proposal.vectors, strict=True))
    others = [i for i in vectors if i not in distance]
    if others and proposal.in_step:  # the index's own copies of the vectors
        rows = np.frombuffer(b"".join(vectors[i] for i in others), dtype=np.float32)
        distance.update(zip(others, cosine_distances(rows, query), strict=True))
    elif others:  # present and within the filters, with their exact distance (Chroma's own)
        got = collection.query(
            query_embeddings=[query], n_results=len(others), ids=others, where=ranking.where,
            include=["distances"],
        )  # fmt: skip
        distance.update(zip(got["ids"][0], map(float, got["distances"][0]), strict=True))
        missed = [i for i in others if i not in distance]
        if missed:  # left out by the approximate index, or by the filters
            rest = collection.get(ids=missed, where=ranking.where, include=["embeddings"])
            distance.update(
                zip(rest["ids"], cosine_distances(rest["embeddings"], query), strict=True)
            )
    lexical = [i for i in vectors if i in distance]
    fused = rrf([lexical, dense])  # a tie between the two: the words' choice first
    return replace(ranking, ids=fused, distances=[distance[i] for i in fused])


# -- the index beside a store -------------------------------------------------------------------


def index_for(backend: Any) -> LexicalIndex:
    """The lexical index of `backend`'s store."""
    return LexicalIndex(index_path(backend.path, backend.server, backend.name))


def lexical_state(backend: Any) -> str:
    """What `stats` says of the lexical index."""
    state = index_for(backend).state()
    if not state.get("version"):
        return "off until the next ingest builds it (searches rank by vectors alone)"
    if backend.server is not None:
        return f"on (a cache of the server's chunks at {index_for(backend).path})"
    if state.get("clean") != "1" or state["version"] != backend.version():
        return "on, out of step with the store until the next ingest (an ingest was cut short)"
    return "on"


def proposer(backend: Any) -> Propose | None:
    """What proposes a search's lexical candidates, or None when the store has no index.

    An embedded store's index is read as the last ingest left it; a server's cache is first
    brought in step when the server's store version is not the one it holds (another client
    ingested)."""
    index = index_for(backend)
    if backend.server is None:
        return index.search if index.exists() else None

    def propose(query: str, n: int, where: dict[str, Any] | None, version: str) -> Proposal | None:
        state = index.state()
        collection = backend.require()
        if state.get("version") != version or state.get("collection") != str(collection.id):
            try:
                index.sync(collection, version)
            except (OSError, sqlite3.Error) as exc:  # an unwritable cache: vectors alone
                logger.warning("cannot keep the lexical cache %s: %s", index.path, exc)
                return None
        return index.search(query, n, where, version)

    return propose


def before_ingest(backend: Any) -> str | None:
    """Mark the index out of step before an ingest writes (the ingest's `after_ingest` marks
    it in step again; a killed ingest leaves it marked, and the next ingest repairs it).
    Returns the store's version when the index was in step with it until now, else None."""
    if backend.open(create=False) is None:
        return None
    index = index_for(backend)
    try:
        state = index.state()
        version = backend.version()
        in_step = state.get("clean") == "1" and state.get("version") == version
        in_step = in_step and state.get("collection") == str(backend.require().id)
        index.mark_dirty()
    except (OSError, sqlite3.Error) as exc:
        logger.warning("cannot mark the lexical index before ingesting: %s", exc)
        return None
    return version if in_step else None


def after_ingest(
    backend: Any, wrote: bool, in_step: str | None = None, changes: dict[str, bool] | None = None
) -> None:
    """Bring the index in step with the store after an ingest (the store's version bumped).
    An ingest that wrote nothing into an embedded store whose version is still the one the
    index was in step with before it (`in_step`, from `before_ingest`; ingests into one embedded
    store take turns) only marks it in step again; one that ran to its end and says which ids
    it wrote (`changes`: for each, whether it is stored now) has the index apply those alone
    (`LexicalIndex.apply`); any other reads every id from Chroma (`LexicalIndex.sync`).
    A failure is a warning: the index stays marked out of step, searches have Chroma check what
    it proposes, and the next ingest tries again."""
    if backend.open(create=False) is None:
        return
    index = index_for(backend)
    state = index.state()
    version = backend.version()
    if not wrote and state.get("clean") == "1" and state.get("version") == version:
        return
    try:
        quiet = not wrote and in_step == version and backend.server is None
        if quiet and index.mark_clean(version):
            return
        applied = None
        if changes is not None and in_step is not None and backend.server is None:
            applied = index.apply(backend.require(), version, in_step, changes)
        added, deleted = applied or index.sync(backend.require(), version)
    except (OSError, sqlite3.Error) as exc:
        logger.warning("the lexical index %s is out of step with the store: %s", index.path, exc)
        return
    logger.debug("lexical index %s: %d chunks added, %d deleted", index.path, added, deleted)
