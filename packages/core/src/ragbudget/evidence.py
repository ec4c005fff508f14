"""More evidence per token: merge, dedupe and diversify ranked chunks under `fit()`'s guarantee.

A plain top-k prefix spends a budget on repeats: overlapping chunks of one file under separate
headers, copies of one text, one long file filling the budget. These pure functions work on
`Chunk`s whose positions are in their metadata (keys named by the caller, `Positions`):

- `merge_adjacent`: adjacent or overlapping chunks of one source become one span, the overlap
  counted once, the merged ids reported.
- `dedupe`: exact and near-duplicate texts (Jaccard similarity of word shingles) leave, each
  reported with the id of the higher-ranked text it repeats.
- `diversify`: an optional cap per source and a redundancy-aware (MMR) order, on a lexical
  similarity or on the caller's embeddings.
- `select`: all of it, then the budget: when the plain prefix would show few results, each
  result gets a fair share of the budget and one larger than its share keeps its lines that
  best match the query. The rendering (the caller's `render`, else headers and texts joined)
  is measured whole and counts at most `max_tokens`; inputs are never mutated; every input id
  is accounted for (kept, merged, deduped, capped, dropped, cut).
"""

from __future__ import annotations

import functools
import logging
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ragbudget._checks import check_int
from ragbudget._duplicates import _jaccard, _shingles, dedupe, similarity
from ragbudget.budget import _as_chunks, rank_chunks
from ragbudget.counters import CounterSpec, get_counter
from ragbudget.fitting import Fitted, largest_prefix
from ragbudget.models import Chunk
from ragbudget.snippets import shared_snippets
from ragbudget.text import counted

__all__ = [
    "EvidenceReport",
    "EvidenceResult",
    "Positions",
    "dedupe",
    "diversify",
    "merge_adjacent",
    "select",
    "similarity",
]

logger = logging.getLogger(__name__)

_SHARE_ROUNDS = 3
"""Rounds of fair shares: the first sized on results alone, the others on what the results
took plus what is left (or half of what the round before added, when that did not fit)."""
_MIN_SPARE = 8
"""Tokens per result left over that are worth another round."""

Render = Callable[[list[Chunk]], str]
"""What a model reads for the kept chunks, in order; `select` measures it whole."""


@dataclass(frozen=True)
class Positions:
    """Where a chunk's position is in its metadata (the caller's ecosystem's conventions).

    The store and LangChain (`add_start_index=True`) use `source` and `start_index`; the end is
    `end_index` in the store, else the start plus the text's length. LlamaIndex nodes carry
    `start_char_idx`/`end_char_idx` (the plugins copy them into these keys).
    """

    source: str = "source"
    start: str = "start_index"
    end: str | None = "end_index"
    """None: the end is the start plus the text's length."""
    start_line: str | None = "start_line"
    """Line keys (1-based, inclusive) kept in step when spans merge or are cut; None: none."""
    end_line: str | None = "end_line"

    def span(self, chunk: Chunk) -> tuple[str, int, int] | None:
        """`(source, start, end)` when the metadata places the text exactly, else None."""
        meta = chunk.metadata
        source, start = meta.get(self.source), meta.get(self.start)
        end = meta.get(self.end) if self.end is not None else None
        if not isinstance(source, str) or type(start) is not int or start < 0:
            return None
        if end is None and self.end is None:
            end = start + len(chunk.text)
        if type(end) is not int or end - start != len(chunk.text):
            return None
        return source, start, end

    def moved(self, chunk: Chunk, text: str, start: int, line: int | None) -> Chunk:
        """A copy of `chunk` holding `text` at offset `start` (first line `line`)."""
        meta = dict(chunk.metadata)
        meta[self.start] = start
        if self.end is not None:
            meta[self.end] = start + len(text)
        if line is not None and self.start_line and self.end_line:
            meta[self.start_line] = line
            meta[self.end_line] = line + text.count("\n")
        return chunk.model_copy(update={"text": text, "metadata": meta})

    def first_line(self, chunk: Chunk) -> int | None:
        value = chunk.metadata.get(self.start_line) if self.start_line else None
        return value if type(value) is int else None


def merge_adjacent(
    chunks: Sequence[Chunk], positions: Positions = Positions()
) -> tuple[list[Chunk], dict[str, list[str]]]:
    """Adjacent or overlapping chunks of one source as one span each, the overlap counted once.

    `chunks` are in rank order. A span takes the id, score and metadata of its best-ranked
    member (positions updated) and that member's place. Returns the chunks and, for each span
    of several, `{its id: [the other members' ids]}`. Chunks whose metadata does not place
    their text exactly (`Positions.span`) stay as they are.
    """
    placed: dict[str, list[tuple[int, int, int]]] = {}
    for rank, chunk in enumerate(chunks):
        span = positions.span(chunk)
        if span is not None:
            placed.setdefault(span[0], []).append((span[1], span[2], rank))
    groups: dict[int, list[int]] = {}  # best rank -> member ranks, by start
    for spans in placed.values():
        spans.sort()
        run: list[tuple[int, int, int]] = []
        for item in spans:
            if run and item[0] > max(end for _, end, _ in run):
                _group(run, groups)
                run = []
            run.append(item)
        _group(run, groups)
    out: list[Chunk] = []
    merged: dict[str, list[str]] = {}
    in_group = {r for members in groups.values() for r in members}
    for rank, chunk in enumerate(chunks):
        if rank in groups and len(groups[rank]) > 1:
            members = [chunks[r] for r in groups[rank]]
            out.append(_joined(chunk, members, positions))
            merged[chunk.id] = [m.id for m in members if m.id != chunk.id]
        elif rank in groups or rank not in in_group:
            out.append(chunk)
    return out, merged


def _group(run: list[tuple[int, int, int]], groups: dict[int, list[int]]) -> None:
    if run:
        groups[min(r for _, _, r in run)] = [r for _, _, r in run]


def _joined(best: Chunk, members: list[Chunk], positions: Positions) -> Chunk:
    """One chunk holding the union of `members`' spans (sorted by start, contiguous)."""
    spans = [positions.span(m) for m in members]
    start = min(s[1] for s in spans if s)
    text, end = "", start
    for member, span in zip(members, spans, strict=True):
        assert span is not None
        if span[2] > end:
            text += member.text[end - span[1] :]
            end = span[2]
    lines = [n for n in (positions.first_line(m) for m in members) if n is not None]
    joined = positions.moved(best, text, start, min(lines) if len(lines) == len(members) else None)
    score = max((m.score for m in members if m.score is not None), default=best.score)
    return joined.model_copy(update={"score": score})


def diversify(
    chunks: Sequence[Chunk],
    *,
    max_per_source: int | None = None,
    mmr: float | None = None,
    embeddings: Mapping[str, Sequence[float]] | None = None,
    positions: Positions = Positions(),
) -> tuple[list[Chunk], list[str]]:
    """`chunks` (rank order) with at most `max_per_source` per source, reordered by maximal
    marginal relevance when `mmr` (the weight of relevance, 0 to 1) is given: each next chunk
    maximises `mmr * relevance - (1 - mmr) * its largest similarity to those already chosen`.
    Similarity is cosine on `embeddings` (`{id: vector}`, for every chunk) when given, else
    lexical (`similarity`). Returns the chunks and the ids the cap left out, in rank order."""
    if max_per_source is not None:
        check_int("max_per_source", max_per_source, minimum=1)
    if mmr is not None and not 0.0 <= mmr <= 1.0:
        msg = f"mmr must be between 0 and 1, got {mmr}"
        raise ValueError(msg)
    kept, capped = list(chunks), []
    if max_per_source is not None:
        seen: dict[str, int] = {}
        kept = []
        for chunk in chunks:
            source = chunk.metadata.get(positions.source)
            key = source if isinstance(source, str) else f"\0{chunk.id}"
            seen[key] = seen.get(key, 0) + 1
            if seen[key] <= max_per_source:
                kept.append(chunk)
            else:
                capped.append(chunk.id)
    if mmr is None or len(kept) < 3:
        return kept, capped
    return _mmr(kept, mmr, _similar(kept, embeddings)), capped


def _similar(
    chunks: list[Chunk], embeddings: Mapping[str, Sequence[float]] | None
) -> Callable[[int, int], float]:
    if embeddings is not None:
        missing = [c.id for c in chunks if c.id not in embeddings]
        if missing:
            msg = f"embeddings has no vector for chunk id {missing[0]!r}"
            raise ValueError(msg)
        vectors = [list(embeddings[c.id]) for c in chunks]
        norms = [math.sqrt(sum(x * x for x in v)) or 1.0 for v in vectors]
        return lambda i, j: (
            sum(a * b for a, b in zip(vectors[i], vectors[j], strict=True)) / (norms[i] * norms[j])
        )
    words = [_shingles(c.text, 1) for c in chunks]
    return lambda i, j: _jaccard(words[i], words[j])


def _mmr(chunks: list[Chunk], weight: float, sim: Callable[[int, int], float]) -> list[Chunk]:
    n = len(chunks)
    scores = [c.score for c in chunks if c.score is not None]
    if len(scores) == n:
        lo, hi = min(scores), max(scores)
        rel = [(s - lo) / (hi - lo) if hi > lo else 1.0 for s in scores]
    else:
        rel = [1.0 - i / n for i in range(n)]
    chosen: list[int] = []
    nearest = [0.0] * n
    left = list(range(n))
    while left:
        best = max(left, key=lambda i: (weight * rel[i] - (1 - weight) * nearest[i], -i))
        chosen.append(best)
        left.remove(best)
        for i in left:
            nearest[i] = max(nearest[i], sim(i, best))
    return [chunks[i] for i in chosen]


class EvidenceReport(BaseModel):
    """What `select` did with every input id: each is in exactly one of kept_ids, merged (as a
    member), deduped, capped_ids and dropped_ids; cut_ids are kept ids whose text was cut."""

    model_config = ConfigDict(extra="forbid")

    kept_ids: list[str] = Field(description="Ids of the returned chunks, in order.")
    merged: dict[str, list[str]] = Field(
        default_factory=dict,
        description="Returned id -> ids of the other chunks merged into its span.",
    )
    deduped: dict[str, str] = Field(
        default_factory=dict, description="Left-out id -> id of the better-ranked text it repeats."
    )
    capped_ids: list[str] = Field(
        default_factory=list, description="Ids left out by the cap per source, in rank order."
    )
    dropped_ids: list[str] = Field(
        default_factory=list, description="Ids left out for lack of budget, in rank order."
    )
    cut_ids: list[str] = Field(
        default_factory=list,
        description="Returned ids whose text is a part of theirs (best-matching lines, or cut).",
    )
    used_tokens: int = Field(description="Tokens of the rendering, measured by the counter.")
    max_tokens: int = Field(description="The budget.")
    counter: str = Field(description="Name of the token counter used.")


class EvidenceResult(BaseModel):
    """What `select` returns: the chunks to show, their measured rendering, and the report."""

    model_config = ConfigDict(extra="forbid")

    chunks: list[Chunk] = Field(description="The chunks to show, best first (copies).")
    text: str = Field(description="Their rendering, exactly as measured.")
    report: EvidenceReport = Field(description="What happened to every input id.")


def joiner(separator: str = "\n\n", header: Callable[[int, Chunk], str] | None = None) -> Render:
    """The default rendering: each chunk's `header(rank, chunk)` line (1-based rank) above its
    text, joined with `separator`."""

    def render(chunks: list[Chunk]) -> str:
        if header is None:
            return separator.join(c.text for c in chunks)
        return separator.join(f"{header(i, c)}\n{c.text}" for i, c in enumerate(chunks, 1))

    return render


def select(
    chunks: Iterable[Chunk | Mapping[str, Any]],
    max_tokens: int,
    *,
    counter: CounterSpec = None,
    query: str | None = None,
    render: Render | None = None,
    separator: str = "\n\n",
    header: Callable[[int, Chunk], str] | None = None,
    positions: Positions = Positions(),
    merge: bool = True,
    dedupe_threshold: float | None = 0.9,
    max_per_source: int | None = None,
    mmr: float | None = None,
    embeddings: Mapping[str, Sequence[float]] | None = None,
    snippets: bool = True,
    min_share: int = 100,
    max_results: int = 10,
    cuts: dict[Any, Any] | None = None,
) -> EvidenceResult:
    """The ranked `chunks` as the most distinct evidence whose rendering fits `max_tokens`.

    In order: near-duplicates leave (`dedupe_threshold`, None to keep them), adjacent spans of
    one source merge (`merge`), a cap per source and an MMR order apply (`diversify`), then the
    budget. The plain ranked prefix of whole chunks that fits is the floor: with `snippets`,
    when it holds fewer than `min(max_results, max_tokens // min_share)` results, that many
    results share the budget fairly (one smaller than its share keeps all of it, the rest is
    shared among the others) and a result larger than its share keeps the lines that best
    match `query` (its first lines without one). Without `snippets`, only a top result too
    large to fit whole is cut so (as `fit` cuts it). The results always include the prefix's.

    The rendering is `render(kept)` when given (measured whole, envelope included), else each
    chunk's `header` line and text joined with `separator`; `EvidenceResult.text` is it, and
    counts at most `max_tokens` by `counter`. Inputs are never mutated. `cuts`: a dict kept
    between calls that render with the same `render`, counter, query and positions (a caller
    selecting again from other prefixes of one ranking); the snippets cut, the header counts that
    size them, and how much less results cost together than alone are remembered there.

        >>> from ragbudget.evidence import select
        >>> chunks = [{"id": "a", "text": "one two", "score": 0.9},
        ...           {"id": "b", "text": "one two", "score": 0.5}]
        >>> select(chunks, 100, counter="chars:1").report.deduped
        {'b': 'a'}
    """
    check_int("max_tokens", max_tokens, minimum=0)
    check_int("min_share", min_share, minimum=1)
    check_int("max_results", max_results, minimum=1)
    tc = get_counter(counter)
    items = _as_chunks(chunks)
    ranked = [items[i] for i in rank_chunks(items)]
    deduped: dict[str, str] = {}
    if dedupe_threshold is not None:
        ranked, deduped = dedupe(ranked, threshold=dedupe_threshold)
    merged: dict[str, list[str]] = {}
    if merge:
        ranked, merged = merge_adjacent(ranked, positions)
    ranked, capped = diversify(
        ranked, max_per_source=max_per_source, mmr=mmr, embeddings=embeddings, positions=positions
    )
    draw = render if render is not None else joiner(separator, header)
    base = tc.count(draw([]))
    if base > max_tokens:
        msg = (
            f"max_tokens={max_tokens} cannot hold even an empty rendering "
            f"({counted(base, 'token')})"
        )
        raise ValueError(msg)
    costs = _Costs(ranked, base, tc, draw)  # counted as the budget reads them: a few ranks
    cuts = {} if cuts is None else cuts  # what one call measures, the next (or round) reuses
    kept, fitted = _prefix(ranked, costs, max_tokens - base, max_tokens, tc, draw, cuts)
    # Without snippets, only a top result too large to fit whole is cut (as `fit` does).
    target = max(1, min(max_results, max_tokens // min_share)) if snippets else 1
    if min(target, len(ranked)) > len(kept):
        # Shares are sized on each result rendered alone; together they cost less (a notice
        # said once, shorter paths), so the budget left over is shared out again.
        room, fits = max_tokens - base, None  # `fits`: the largest room whose answer fit
        for _ in range(_SHARE_ROUNDS):
            shared = shared_snippets(
                ranked[:target],
                costs.first(target),
                base,
                room,
                tc,
                draw,
                query,
                positions,
                cuts,
            )
            more = largest_prefix(
                functools.partial(_first, draw, shared), len(shared), max_tokens, tc
            )
            # The prefix's results are the floor: the shared answer must hold every one (and
            # a later round, every result of the round before).
            if more is None or not {c.id for c in kept} <= {c.id for c in shared[: more.size]}:
                # Too much added (cut to other lines, results cost more together): half of it.
                if fits is None or room - fits < 2 * _MIN_SPARE * len(shared):
                    break
                room = (fits + room) // 2
                continue
            kept, fitted, fits = shared[: more.size], more, room
            spare = max_tokens - more.tokens
            if more.size < len(shared) or spare < _MIN_SPARE * len(shared):
                break
            # The next room: what the results took, each measured alone (less than their
            # shares: cuts end at whole lines), plus what is left; measured together they
            # cost less than alone, so this is about what fills the budget.
            took = sum(tc.count(draw([c])) - base for c in shared) + 2 * len(shared)
            if took + spare <= room:  # the results left their shares unused: no cut to grow
                break
            room = took + spare
    kept_ids = [c.id for c in kept]
    shown = set(kept_ids)
    originals = {c.id: c.text for c in ranked}
    report = EvidenceReport(
        kept_ids=kept_ids,
        merged={k: v for k, v in merged.items() if k in shown},
        deduped=deduped,
        capped_ids=[i for c in capped for i in [c, *merged.get(c, [])]],
        dropped_ids=[i for c in ranked if c.id not in shown for i in [c.id, *merged.get(c.id, [])]],
        cut_ids=[c.id for c in kept if c.text != originals[c.id]],
        used_tokens=fitted.tokens,
        max_tokens=max_tokens,
        counter=tc.name,
    )
    if logger.isEnabledFor(logging.DEBUG):
        logger.debug(
            "select: kept %d of %d (%d merged, %d deduped, %d capped, %d cut); %d of %d tokens",
            len(kept), len(items), sum(map(len, report.merged.values())), len(deduped),
            len(capped), len(report.cut_ids), fitted.tokens, max_tokens,
        )  # fmt: skip
    return EvidenceResult(chunks=kept, text=fitted.text, report=report)


def _first(draw: Render, chunks: list[Chunk], k: int) -> str:
    """The rendering of the first `k` of `chunks`."""
    return draw(chunks[:k])


class _Costs:
    """What each ranked chunk adds to the empty rendering, rendered alone: counted when first
    read, so a long ranking costs what the budget reaches into, not a count per rank."""

    def __init__(self, ranked: list[Chunk], base: int, tc: Any, draw: Render) -> None:
        self.ranked, self.base, self.tc, self.draw = ranked, base, tc, draw
        self.known: list[int] = []

    def __getitem__(self, i: int) -> int:
        while len(self.known) <= i:
            self.known.append(self.tc.count(self.draw([self.ranked[len(self.known)]])) - self.base)
        return self.known[i]

    def __len__(self) -> int:
        return len(self.ranked)

    def first(self, n: int) -> list[int]:
        return [self[i] for i in range(min(n, len(self.ranked)))]


def _prefix(
    ranked: list[Chunk],
    costs: _Costs,
    room: int,
    max_tokens: int,
    tc: Any,
    draw: Render,
    memo: dict[Any, Any],
) -> tuple[list[Chunk], Fitted]:
    """The longest ranked prefix of whole chunks whose rendering fits, and that rendering
    (`room`: the budget less the empty rendering).

    The search starts from the results whose costs alone fit, each cost scaled by what the
    prefix an earlier call on `memo` found cost together against alone (results cost less
    together: a notice said once), so that it counts about two renderings, not four."""
    scale = memo.get(_TOGETHER, 1.0)
    k, left = 0, float(room)
    while k < len(costs) and costs[k] * scale <= left:
        left -= costs[k] * scale
        k += 1
    fitted = largest_prefix(lambda j: draw(ranked[:j]), len(ranked), max_tokens, tc, guess=k)
    assert fitted is not None  # the caller checked that draw([]) fits
    alone = sum(costs[i] for i in range(fitted.size))
    if alone > 0:
        memo[_TOGETHER] = (fitted.tokens - (max_tokens - room)) / alone
    return ranked[: fitted.size], fitted


_TOGETHER = ("together",)
"""`select`'s memo key of the last prefix's cost together over its costs alone."""
