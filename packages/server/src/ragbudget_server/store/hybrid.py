"""Hybrid ranking: the dense (vector) ranking and the lexical (BM25) one, fused by reciprocal
rank fusion, and the lexical index kept in step with the store.

A new search's ranking starts with the fusion of two pools (`seed`): Chroma's `POOL` nearest
chunks and the lexical index's `POOL` best BM25 matches. Each chunk scores `sum 1 / (RRF_K +
rank)` over the lists it is in (Cormack, Clarke and Buettcher, SIGIR 2009, with their k = 60):
no score scales to calibrate, and a chunk both lists rank well comes first, while one that only
the words find (an identifier, a rare word, a CJK phrase the hashing embedding spreads thin)
still enters. Ties go to the better dense rank, then the id. The pools are the same for every
page size, so the fused prefix is the same for every `offset` and `limit`; past it, the ranking
continues by dense distance (`paging.extend`) and covers every matching chunk once, as before.
A chunk the index proposes is checked against Chroma (it exists, it passes the filters) and
gets its exact cosine distance, so a result's score means what it always meant.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np

from ragbudget_server.store import cursor as cursors
from ragbudget_server.store.lexical import LexicalIndex, index_path

__all__ = [
    "POOL",
    "RRF_K",
    "after_ingest",
    "before_ingest",
    "cosine_distances",
    "index_for",
    "lexical_state",
    "proposer",
    "rrf",
    "seed",
]

logger = logging.getLogger(__name__)

POOL = 50
"""Candidates each ranking brings to the fusion."""
RRF_K = 60

Propose = Callable[[str, int, "dict[str, Any] | None"], "list[str] | None"]


def rrf(rankings: list[list[str]], k: int = RRF_K) -> list[str]:
    """Ids ranked by reciprocal rank fusion; ties by rank in the first ranking, then id."""
    score: dict[str, float] = {}
    for ranking in rankings:
        for rank, id_ in enumerate(ranking, start=1):
            score[id_] = score.get(id_, 0.0) + 1.0 / (k + rank)
    first = {id_: rank for rank, id_ in enumerate(rankings[0] if rankings else [])}
    return sorted(score, key=lambda i: (-score[i], first.get(i, len(first)), i))


def cosine_distances(vectors: Any, query: list[float]) -> list[float]:
    """Cosine distance of each row of `vectors` to `query` (the collections are cosine)."""
    rows = np.asarray(vectors, dtype=np.float64)
    vector = np.asarray(query, dtype=np.float64)
    rows = rows.reshape(len(rows), vector.size) if rows.size else rows.reshape(0, vector.size)
    norms = np.linalg.norm(rows, axis=1) * (np.linalg.norm(vector) or 1.0)
    cosine = (rows @ vector) / np.where(norms == 0, 1.0, norms)
    return [float(d) for d in (1.0 - cosine).tolist()]


def seed(
    collection: Any,
    ranking: cursors.Ranking,
    embedding: Callable[[], list[float]],
    proposed: list[str],
) -> cursors.Ranking:
    """A new `ranking` (nothing ranked yet) started with the fusion of Chroma's `POOL` nearest
    chunks and the lexical index's `proposed` ids."""
    ask = min(POOL, ranking.total)
    if ask <= 0:
        return ranking
    query = embedding()
    found = collection.query(
        query_embeddings=[query], n_results=ask, where=ranking.where, include=["distances"]
    )
    pairs = sorted(
        (float(d), i) for i, d in zip(found["ids"][0], found["distances"][0], strict=True)
    )
    distance = {i: d for d, i in pairs}
    dense = [i for _, i in pairs]
    others = [i for i in dict.fromkeys(proposed) if i not in distance]
    if others:  # present and within the filters, with their exact distance
        got = collection.get(ids=others, where=ranking.where, include=["embeddings"])
        distance.update(zip(got["ids"], cosine_distances(got["embeddings"], query), strict=True))
    lexical = [i for i in dict.fromkeys(proposed) if i in distance]
    fused = rrf([dense, lexical])
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
    brought in step when the server's store changed since (another client ingested)."""
    index = index_for(backend)
    if backend.server is not None:
        collection = backend.require()
        state = index.state()
        if state.get("version") != backend.version() or state.get("collection") != str(
            collection.id
        ):
            try:
                index.sync(collection, backend.version())
            except OSError as exc:  # an unwritable cache: vectors alone
                logger.warning("cannot keep the lexical cache %s: %s", index.path, exc)
                return None
    elif not index.exists():
        return None
    return index.search


def before_ingest(backend: Any) -> None:
    """Mark the index out of step before an ingest writes (the ingest's `after_ingest` marks
    it in step again; a killed ingest leaves it marked, and the next ingest repairs it)."""
    if backend.open(create=False) is not None:
        index_for(backend).mark_dirty()


def after_ingest(backend: Any, wrote: bool) -> None:
    """Bring the index in step with the store after an ingest (the store's version bumped)."""
    if backend.open(create=False) is None:
        return
    index = index_for(backend)
    state = index.state()
    version = backend.version()
    if not wrote and state.get("clean") == "1" and state.get("version") == version:
        return
    added, deleted = index.sync(backend.require(), version)
    logger.debug("lexical index %s: %d chunks added, %d deleted", index.path, added, deleted)
