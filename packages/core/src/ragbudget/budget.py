"""`fit()`: keep the best chunks whose tokens fit the budget, and say what was left out."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any, Literal

from ragbudget._cut import cut_to_tokens
from ragbudget.counters import CounterSpec, LazyCounts, get_counter
from ragbudget.models import BudgetResult, Chunk, TruncationInfo

__all__ = ["CUT_MARKER", "Order", "Oversize", "Strategy", "fit", "rank_chunks"]

logger = logging.getLogger("ragbudget")

Strategy = Literal["stop", "fill"]
Oversize = Literal["truncate", "drop"]
Order = Literal["score", "original"]

CUT_MARKER = "\n[... cut to fit a {limit:,}-token limit; {total:,} tokens in full]"
"""Appended to a chunk cut to fit; counted against the budget like the text."""

_INFO_SHARE = 0.7  # a fit that uses more than this share of the budget logs at info


def _check_int(name: str, value: Any, *, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        msg = f"{name} must be an int, got {value!r}"
        raise TypeError(msg)
    if value < minimum:
        msg = f"{name} must be >= {minimum}, got {value}"
        raise ValueError(msg)
    return value


def _check_choice(name: str, value: Any, choices: tuple[str, ...]) -> None:
    if value not in choices:
        msg = f"{name} must be one of {', '.join(map(repr, choices))}, got {value!r}"
        raise ValueError(msg)


def _as_chunks(chunks: Iterable[Chunk | Mapping[str, Any]]) -> list[Chunk]:
    if isinstance(chunks, str | bytes | Mapping):
        msg = f"chunks must be an iterable of Chunk, got {type(chunks).__name__}"
        raise TypeError(msg)
    out: list[Chunk] = []
    for i, item in enumerate(chunks):
        if isinstance(item, Chunk):
            out.append(item)
        elif isinstance(item, Mapping):
            out.append(Chunk.model_validate(item))
        else:
            msg = f"chunks[{i}] must be a Chunk or a mapping, got {type(item).__name__}"
            raise TypeError(msg)
    ids = [chunk.id for chunk in out]
    if len(set(ids)) < len(ids):
        seen: set[str] = set()
        for i, chunk_id in enumerate(ids):
            if chunk_id in seen:
                msg = f"chunks[{i}] repeats id {chunk_id!r}: ids must be unique within one fit"
                raise ValueError(msg)
            seen.add(chunk_id)
    return out


def rank_chunks(chunks: list[Chunk]) -> list[int]:
    """Input indices, best first: highest score first, ties and unscored in input order,
    unscored after scored."""
    scores = [chunk.score for chunk in chunks]
    # sorted() is stable: equal keys keep input order.
    if None not in scores:
        return sorted(range(len(scores)), key=[-(s or 0.0) for s in scores].__getitem__)
    keys = [(s is None, -(s or 0.0)) for s in scores]
    return sorted(range(len(scores)), key=keys.__getitem__)


def fit(
    chunks: Iterable[Chunk | Mapping[str, Any]],
    max_tokens: int,
    *,
    counter: CounterSpec = None,
    strategy: Strategy = "stop",
    oversize: Oversize = "truncate",
    max_tokens_per_chunk: int | None = None,
    order: Order = "score",
) -> BudgetResult:
    """Keep the highest-score chunks whose tokens fit `max_tokens`.

    Oversized chunks (over `max_tokens`, or `max_tokens_per_chunk` when set) are cut at the
    best boundary with a visible marker (`oversize="truncate"`) or dropped (`"drop"`); no other
    chunk is split. `strategy="stop"` keeps the longest ranked prefix that fits; `"fill"` also
    keeps lower-ranked chunks that still fit. The returned texts, counted by `counter`, sum to
    at most `max_tokens`. The input is never mutated.
    """
    _check_int("max_tokens", max_tokens, minimum=0)
    if max_tokens_per_chunk is not None:
        _check_int("max_tokens_per_chunk", max_tokens_per_chunk, minimum=1)
    _check_choice("strategy", strategy, ("stop", "fill"))
    _check_choice("oversize", oversize, ("truncate", "drop"))
    _check_choice("order", order, ("score", "original"))
    tc = get_counter(counter)
    items = _as_chunks(chunks)

    ranking = rank_chunks(items)
    limit = max_tokens if max_tokens_per_chunk is None else min(max_tokens, max_tokens_per_chunk)
    counts = LazyCounts(tc, [items[idx].text for idx in ranking])

    # Down the ranking: an oversized chunk is cut (a copy) or dropped; the others are kept
    # while they fit. With "stop", everything after the first misfit is dropped uncounted.
    kept: list[tuple[int, Chunk, int, bool, int]] = []  # (input index, chunk, tokens, cut, rank)
    dropped: set[int] = set()
    used = 0
    next_rank: int | None = None
    for rank, idx in enumerate(ranking):
        if max_tokens == 0 or (strategy == "stop" and next_rank is not None):
            dropped.add(idx)
            continue
        chunk, n = items[idx], counts[rank]
        cand = (idx, chunk, n, False, rank)
        if n > limit:
            cut = None
            if oversize == "truncate":
                marker = CUT_MARKER.format(limit=limit, total=n)
                cut = cut_to_tokens(chunk.text, limit, tc, marker)
            if cut is None:
                dropped.add(idx)
                continue
            cand = (idx, chunk.model_copy(update={"text": cut}), tc.count(cut), True, rank)
        if used + cand[2] <= max_tokens:
            kept.append(cand)
            used += cand[2]
            continue
        dropped.add(idx)
        if next_rank is None:
            next_rank = rank
    if next_rank is None and max_tokens == 0 and items:
        next_rank = 0

    if order == "original":
        kept.sort(key=lambda cand: cand[0])
    cut_ids = [c[1].id for c in kept if c[3]]
    dropped_ids = [items[idx].id for idx in ranking if idx in dropped] if dropped else []
    info = TruncationInfo(
        truncated=bool(dropped_ids or cut_ids),
        reason="token_budget" if dropped_ids else ("chunk_cut" if cut_ids else None),
        original_count=len(items),
        returned_count=len(kept),
        dropped_ids=dropped_ids,
        cut_ids=cut_ids,
        used_tokens=used,
        max_tokens=max_tokens,
        counter=tc.name,
        exact=tc.exact,
        next_offset=next_rank,
    )
    _log(info)
    return BudgetResult(
        chunks=[c[1] for c in kept],
        info=info,
        tokens=[c[2] for c in kept],
        ranks=[c[4] for c in kept],
    )


def _log(info: TruncationInfo) -> None:
    if info.truncated:
        logger.warning(
            "kept %d of %d chunks (%d dropped, %d cut), %d of %d tokens (%s)",
            info.returned_count,
            info.original_count,
            len(info.dropped_ids),
            len(info.cut_ids),
            info.used_tokens,
            info.max_tokens,
            info.counter,
        )
    elif info.max_tokens and info.used_tokens > _INFO_SHARE * info.max_tokens:
        logger.info(
            "%d chunks use %d of %d tokens (%.0f%% of the budget)",
            info.returned_count,
            info.used_tokens,
            info.max_tokens,
            100 * info.used_tokens / info.max_tokens,
        )
