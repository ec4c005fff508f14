"""`fit()`: keep the best chunks whose tokens fit the budget, and say what was left out."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Literal, overload

from ragbudget._checks import check_choice, check_int
from ragbudget.counters import CounterSpec, LazyCounts, TokenCounter, get_counter
from ragbudget.fitting import cut_text, largest_prefix
from ragbudget.models import BudgetResult, Chunk, TruncationInfo

__all__ = [
    "CUT_MARKER",
    "CutChunk",
    "Order",
    "Oversize",
    "RenderChunk",
    "Strategy",
    "fit",
    "rank_chunks",
    "with_marker",
]

logger = logging.getLogger(__name__)

Strategy = Literal["stop", "fill"]
Oversize = Literal["truncate", "drop"]
Order = Literal["score", "original"]

CUT_MARKER = "\n[... cut to fit a {limit:,}-token limit; {total:,} tokens in full]"
"""Appended to a chunk cut to fit; counted against the budget like the text."""

RenderChunk = Callable[[Chunk], str]
"""How a chunk is shown to the model: its text with what goes around it (a header, a
document formatter); `fit` counts this rendering."""
CutChunk = Callable[[Chunk, str, str], Chunk]
"""`cut(chunk, kept, marker)`: the chunk shown in place of `chunk` when only `kept` (a prefix
of its text) fits, `marker` being the cut marker to show; the default is a copy whose text is
`with_marker(kept, marker)`."""


def with_marker(kept: str, marker: str) -> str:
    """A cut text as shown: the kept part, trailing space dropped, then the marker."""
    kept = kept.rstrip()
    return kept + marker if kept else marker.lstrip()


def _default_cut(chunk: Chunk, kept: str, marker: str) -> Chunk:
    return chunk.model_copy(update={"text": with_marker(kept, marker)})


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


_Kept = tuple[int, Chunk, int, bool, int, str]  # (input index, chunk, tokens, cut, rank, shown)


def _callable(name: str, value: Any, shape: str) -> None:
    if value is not None and not callable(value):
        msg = f"{name} must be a callable {shape} or None, got {type(value).__name__}"
        raise TypeError(msg)


def _shower(render: RenderChunk | None) -> RenderChunk:
    """`render`, checked: a str for each chunk, or an error naming `render`."""
    if render is None:
        return _text

    def show(chunk: Chunk) -> str:
        text = render(chunk)
        if not isinstance(text, str):
            msg = f"render must return a str, got {type(text).__name__} for chunk {chunk.id!r}"
            raise TypeError(msg)
        return text

    return show


def _text(chunk: Chunk) -> str:
    return chunk.text


def _cutter(cut: CutChunk | None) -> CutChunk:
    """`cut`, checked: a Chunk with the same id, or an error naming `cut`."""
    if cut is None:
        return _default_cut

    def make(chunk: Chunk, kept: str, marker: str) -> Chunk:
        out = cut(chunk, kept, marker)
        if not isinstance(out, Chunk) or out.id != chunk.id:
            got = f"id {out.id!r}" if isinstance(out, Chunk) else type(out).__name__
            msg = f"cut must return a Chunk with the id {chunk.id!r} it was given, got {got}"
            raise TypeError(msg)
        return out

    return make


class _Shown(Sequence[str]):
    """The renderings (plus separator) of the chunks in rank order, each made on first use:
    `LazyCounts` reads only as far as the ranking is walked."""

    def __init__(self, show: Callable[[int], str], size: int) -> None:
        self._show, self._size = show, size
        self._made: dict[int, str] = {}

    def __len__(self) -> int:
        return self._size

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> list[str]: ...
    def __getitem__(self, index: int | slice) -> str | list[str]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(self._size))]
        if index not in self._made:
            self._made[index] = self._show(index)
        return self._made[index]


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
    render: RenderChunk | None = None,
    cut: CutChunk | None = None,
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

    `render`: for items fit does not show itself (a Document through a chain's formatter, a
    node with its metadata header), `render(chunk)` is the text the model sees for `chunk`;
    everything above is then counted on the renderings (`separator.join` of them), and the
    texts returned are the chunks' own, to render again the same way. An oversized chunk is
    cut in its rendered form: its text is cut so that the rendering of the cut chunk fits.
    `cut(chunk, kept, marker)` builds that cut chunk from the kept prefix of its text and the
    cut marker (default: a copy whose text is `with_marker(kept, marker)`); it must keep the
    chunk's id. Both are called with copies, never the caller's chunks; a callable that does
    not return a str (`render`) or a Chunk with the same id (`cut`) is a TypeError naming it.

        >>> from ragbudget import fit
        >>> docs = [{"id": "a", "text": "alpha", "score": 0.9}, {"id": "b", "text": "beta"}]
        >>> r = fit(docs, 20, counter="chars:1", render=lambda c: f"[{c.id}] {c.text}")
        >>> [c.text for c in r.chunks], r.tokens
        (['alpha', 'beta'], [9, 8])
    """
    check_int("max_tokens", max_tokens, minimum=0)
    if max_tokens_per_chunk is not None:
        check_int("max_tokens_per_chunk", max_tokens_per_chunk, minimum=1)
    check_choice("strategy", strategy, ("stop", "fill"))
    check_choice("oversize", oversize, ("truncate", "drop"))
    check_choice("order", order, ("score", "original"))
    _callable("render", render, "Chunk -> str")
    _callable("cut", cut, "(Chunk, kept, marker) -> Chunk")
    tc = get_counter(counter)
    items = _as_chunks(chunks)
    show, make_cut = _shower(render), _cutter(cut)

    ranking = rank_chunks(items)
    limit = max_tokens if max_tokens_per_chunk is None else min(max_tokens, max_tokens_per_chunk)
    sep = separator or ""
    shown = _Shown(lambda rank: show(items[ranking[rank]]) + sep, len(ranking))
    counts = LazyCounts(tc, shown)

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
        cand = (idx, chunk, n, False, rank, shown[rank])
        if n > limit:
            cand_cut = (
                _cut(chunk, limit, n, tc, sep, show, make_cut) if oversize == "truncate" else None
            )
            if cand_cut is None:
                dropped.add(idx)
                continue
            cand = (idx, cand_cut[0], cand_cut[1], True, rank, cand_cut[2])
        if used + cand[2] <= max_tokens:
            kept.append(cand)
            used += cand[2]
            continue
        dropped.add(idx)
        if next_rank is None:
            next_rank = rank
    if next_rank is None and max_tokens == 0 and items:
        next_rank = 0
    if separator is not None and kept:  # one kept chunk too: its text without the separator
        first = kept[0]
        kept, used, left = _joined(kept, separator, max_tokens, order, tc)
        if not kept and oversize == "truncate":
            # The best chunk alone, without the separator it was counted with, can count more
            # (an estimate is not monotone at the end of a text): cut it again without it.
            idx, rank = first[0], first[4]
            again = _cut(items[idx], limit, counts[rank], tc, "", show, make_cut)
            if again is not None:
                kept, used = [(idx, again[0], again[1], True, rank, again[2])], again[1]
                left = [cand for cand in left if cand[0] != idx]
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


def _cut(
    chunk: Chunk,
    limit: int,
    total: int,
    tc: TokenCounter,
    sep: str,
    show: RenderChunk,
    make_cut: CutChunk,
) -> tuple[Chunk, int, str] | None:
    """`chunk` cut at the best boundary, with the marker, so that its rendering plus `sep`
    counts at most `limit`: the cut chunk, that count and the rendering plus `sep`. None when
    not even the marker fits."""
    marker = CUT_MARKER.format(limit=limit, total=total)
    fitted = cut_text(
        chunk.text, limit, tc, render=lambda kept: show(make_cut(chunk, kept, marker)) + sep
    )
    if fitted is None:
        return None
    return make_cut(chunk, chunk.text[: fitted.size], marker), fitted.tokens, fitted.text


def _joined(
    kept: list[_Kept], separator: str, max_tokens: int, order: Order, tc: TokenCounter
) -> tuple[list[_Kept], int, list[_Kept]]:
    """The kept chunks (rank order) whose joined renderings fit, its measured count, and those
    that had to leave (the lowest-ranked)."""
    sep = len(separator)

    def render(k: int) -> str:
        part = sorted(kept[:k], key=lambda c: c[0]) if order == "original" else kept[:k]
        return separator.join(c[5][: len(c[5]) - sep] for c in part)

    fitted = largest_prefix(render, len(kept), max_tokens, tc)
    k = 0 if fitted is None else fitted.size
    return kept[:k], 0 if fitted is None else fitted.tokens, kept[k:]


def _log(info: TruncationInfo) -> None:
    """Truncation is fit's normal outcome: logged at DEBUG, for whoever tunes budgets."""
    if logger.isEnabledFor(logging.DEBUG):
        logger.debug("fit: %s", info.summary())
