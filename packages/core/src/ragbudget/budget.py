"""`fit()`: keep the best chunks whose tokens fit the budget, and say what was left out."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any, Literal

from ragbudget._checks import check_choice, check_int
from ragbudget._cut import cut_with_marker
from ragbudget.counters import CounterSpec, LazyCounts, TokenCounter, get_counter
from ragbudget.fitting import largest_prefix
from ragbudget.models import BudgetResult, Chunk, TruncationInfo

__all__ = ["CUT_MARKER", "Order", "Oversize", "Strategy", "fit", "rank_chunks"]

logger = logging.getLogger(__name__)

Strategy = Literal["stop", "fill"]
Oversize = Literal["truncate", "drop"]
Order = Literal["score", "original"]

CUT_MARKER = "\n[... cut to fit a {limit:,}-token limit; {total:,} tokens in full]"
"""Appended to a chunk cut to fit; counted against the budget like the text."""


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


_Kept = tuple[int, Chunk, int, bool, int]  # (input index, chunk, tokens, cut, rank)


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
    separator: str | None = None,
) -> BudgetResult:
    """Keep the highest-score chunks whose tokens fit `max_tokens`.

    Oversized chunks (over `max_tokens`, or `max_tokens_per_chunk` when set) are cut at the
    best boundary with a visible marker (`oversize="truncate"`) or dropped (`"drop"`); no other
    chunk is split. `strategy="stop"` keeps the longest ranked prefix that fits; `"fill"` also
    keeps lower-ranked chunks that still fit. The returned texts, counted by `counter`, sum to
    at most `max_tokens`. The input is never mutated.

    `separator`: when the caller joins the kept texts (`separator.join(texts)`, in the order
    returned), the guarantee is for the joined text as one rendering: each chunk costs its text
    plus the separator while ranking, then the joined text is counted once (BPE counts do not
    add up across joins) and the lowest-ranked kept chunks leave until it fits. `used_tokens`
    is then that measured count.
    """
    check_int("max_tokens", max_tokens, minimum=0)
    if max_tokens_per_chunk is not None:
        check_int("max_tokens_per_chunk", max_tokens_per_chunk, minimum=1)
    check_choice("strategy", strategy, ("stop", "fill"))
    check_choice("oversize", oversize, ("truncate", "drop"))
    check_choice("order", order, ("score", "original"))
    tc = get_counter(counter)
    items = _as_chunks(chunks)

    ranking = rank_chunks(items)
    limit = max_tokens if max_tokens_per_chunk is None else min(max_tokens, max_tokens_per_chunk)
    sep = separator or ""
    counts = LazyCounts(tc, [items[idx].text + sep for idx in ranking])

    # Down the ranking: an oversized chunk is cut (a copy) or dropped; the others are kept
    # while they fit. With "stop", everything after the first misfit is dropped uncounted.
    kept: list[_Kept] = []
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
                cut = cut_with_marker(chunk.text, limit, tc, marker, suffix=sep)
            if cut is None:
                dropped.add(idx)
                continue
            text = cut.text.removesuffix(sep) if sep else cut.text
            cand = (idx, chunk.model_copy(update={"text": text}), cut.tokens, True, rank)
        if used + cand[2] <= max_tokens:
            kept.append(cand)
            used += cand[2]
            continue
        dropped.add(idx)
        if next_rank is None:
            next_rank = rank
    if next_rank is None and max_tokens == 0 and items:
        next_rank = 0
    if separator is not None and len(kept) > 1:
        kept, used, left = _joined(kept, separator, max_tokens, order, tc)
        for cand in left:
            dropped.add(cand[0])
            next_rank = cand[4] if next_rank is None else min(next_rank, cand[4])

    if order == "original":
        kept.sort(key=lambda cand: cand[0])
    cut_ids = [c[1].id for c in kept if c[3]]
    dropped_ids = [items[idx].id for idx in ranking if idx in dropped] if dropped else []
    info = TruncationInfo.of(
        original_count=len(items),
        returned_count=len(kept),
        dropped_ids=dropped_ids,
        cut_ids=cut_ids,
        used_tokens=used,
        max_tokens=max_tokens,
        counter=tc,
        next_offset=next_rank,
    )
    _log(info)
    return BudgetResult(
        chunks=[c[1] for c in kept],
        info=info,
        tokens=[c[2] for c in kept],
        ranks=[c[4] for c in kept],
    )


def _joined(
    kept: list[_Kept], separator: str, max_tokens: int, order: Order, tc: TokenCounter
) -> tuple[list[_Kept], int, list[_Kept]]:
    """The kept chunks (rank order) whose joined text fits, its measured count, and those that
    had to leave (the lowest-ranked)."""

    def render(k: int) -> str:
        part = sorted(kept[:k], key=lambda c: c[0]) if order == "original" else kept[:k]
        return separator.join(c[1].text for c in part)

    fitted = largest_prefix(render, len(kept), max_tokens, tc)
    k = 0 if fitted is None else fitted.size
    return kept[:k], 0 if fitted is None else fitted.tokens, kept[k:]


def _log(info: TruncationInfo) -> None:
    """Truncation is fit's normal outcome: logged at DEBUG, for whoever tunes budgets."""
    if logger.isEnabledFor(logging.DEBUG):
        logger.debug("fit: %s", info.summary())
