"""Snippets for tight budgets: fair shares of a budget, and the lines that best match a query.

When a budget cannot hold every result whole, each gets a fair share (`fair_shares`: max-min
fairness, a result smaller than its share keeps all of it and the rest goes to the others),
and a result larger than its share keeps its window of lines that mentions the query's words
most (`best_window`), instead of being dropped with every result after it (`shared_snippets`, which
`ragbudget.evidence.select` uses).
"""

from __future__ import annotations

import bisect
import re
import unicodedata
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ragbudget.fitting import cut_text, largest_prefix
from ragbudget.models import Chunk
from ragbudget.text import CJK_RUN, bigrams

if TYPE_CHECKING:
    from ragbudget.evidence import Positions

__all__ = ["best_window", "fair_shares", "query_words", "rank_weights", "shared_snippets"]

_NEWLINE = re.compile("\n")

_STOP = frozenset([
    "the", "and", "for", "with", "from", "that", "this", "into", "over", "when", "what",
    "which", "how", "can", "does", "not", "all", "any", "each", "their", "there", "then",
    "than", "are", "its", "was", "has", "have", "been", "will", "way", "one",
])  # fmt: skip


def query_words(query: str | None) -> list[str]:
    """The query's lowercase words worth matching (3+ letters, not stop words), each cut to a
    five-letter stem so that "cookies" matches "cookie"; a Chinese, Japanese or Korean run
    gives its character bigrams (those languages put no spaces between words).

        >>> query_words("Parse the cookies header")
        ['cooki', 'heade', 'parse']
        >>> query_words("Python 能在哪些操作系统上运行？")
        ['pytho', '上运', '些操', '作系', '哪些', '在哪', '操作', '系统', '统上', '能在', '运行']
    """
    text = unicodedata.normalize("NFKC", query or "").lower()
    words = {w[:5] for w in re.findall(r"[a-z0-9]+", text) if len(w) > 2 and w not in _STOP}
    return sorted(words.union(*(bigrams(run) for run in CJK_RUN.findall(text))))


def fair_shares(costs: list[int], room: int, weights: list[float] | None = None) -> list[int]:
    """Max-min fair shares of `room` tokens among results costing `costs`: each result gets
    `min(its cost, its weight's part of what the smaller ones left)` (equal weights when
    `weights` is None); shares sum to at most `room`.

        >>> fair_shares([10, 100, 100], 90)
        [10, 40, 40]
        >>> fair_shares([100, 100, 100], 90, [2, 1, 1])
        [45, 22, 23]
    """
    w = [1.0] * len(costs) if weights is None else [float(x) for x in weights]
    if len(w) != len(costs) or any(not x > 0 for x in w):
        msg = f"weights must be one positive number per cost, got {weights!r}"
        raise ValueError(msg)
    shares = [0] * len(costs)
    left = sum(w)
    for i in sorted(range(len(costs)), key=lambda i: (costs[i] / w[i], i)):
        shares[i] = max(0, min(costs[i], int(room * w[i] / left)))
        room -= shares[i]
        left -= w[i]
    return shares


_TOP_WEIGHT = 3.0
"""The share weight of the best-ranked result (the `r`-th gets `max(1, _TOP_WEIGHT / r)`): the
top results most often hold the answer, and a share too thin for its passage loses it
(`benchmarks/bench_answer_in_context.py` measures it)."""


def rank_weights(n: int) -> list[float]:
    """The share weights of `n` ranked results: 3, 1.5, then 1 each.

    >>> rank_weights(4)
    [3.0, 1.5, 1.0, 1.0]
    """
    return [max(1.0, _TOP_WEIGHT / r) for r in range(1, n + 1)]


_CONTEXT_LINES = 2


_FIRST, _REPEAT = 10, 1
"""What a word's first mention in a window adds to its score, and each later one: a window that
names more of the query's words beats one that names one word often (on both held-out sets of
`benchmarks/bench_answer_in_context.py`, counting every mention alike showed fewer passages)."""


def best_window(text: str, words: list[str], chars: int) -> int:
    """Where (a line start in `text`) to start showing `chars` characters that answer `words`
    best: the earliest window of whole lines at most `chars` long that names the most of the
    words (a word's later mentions add a tenth each), from its first matching line less two
    lines of context, moved back while the rest of the text from there still fits in `chars`;
    0 when no line mentions a word.

        >>> best_window("a\\nb\\nc\\nd\\ncookie jar\\ne", ["cooki"], 15)
        4
    """
    lines = text.split("\n")
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line) + 1)
    hits = [[k for k, w in enumerate(words) if w in line] for line in text.lower().split("\n")]
    seen = [0] * len(words)
    best, first, score, j = 0, 0, 0, 0

    def enter(k: int) -> int:
        seen[k] += 1
        return _FIRST if seen[k] == 1 else _REPEAT

    def leave(k: int) -> int:
        seen[k] -= 1
        return _FIRST if seen[k] == 0 else _REPEAT

    for i in range(len(lines)):
        if j <= i:  # the window is empty: it starts again at line i
            j = i + 1
            score = sum(enter(k) for k in hits[i])
        while j < len(lines) and starts[j + 1] - starts[i] <= chars:
            score += sum(enter(k) for k in hits[j])
            j += 1
        if score > best:
            best, first = score, i
        score -= sum(leave(k) for k in hits[i])
    if best:  # the window from its first matching line, with a little context above it
        while not hits[first]:
            first += 1
        match, above = first, 0  # context only while the matching line still fits
        while (
            above < _CONTEXT_LINES and first > 0 and starts[match + 1] - starts[first - 1] <= chars
        ):
            first, above = first - 1, above + 1
    while first > 0 and len(text) - starts[first - 1] <= chars:
        first -= 1
    return starts[first]


def shared_snippets(
    ranked: list[Chunk],
    costs: list[int],
    base: int,
    room: int,
    tc: Any,
    draw: Callable[[list[Chunk]], str],
    query: str | None,
    positions: Positions,
    cuts: dict[Any, Any] | None = None,
) -> list[Chunk]:
    """`ranked` each within a fair share of `room` (two tokens a result kept for the joins; the
    best-ranked ones weigh more, `rank_weights`),
    as `draw` renders it alone over the `base` tokens of `draw([])`: one larger than its share
    is cut to its lines that best answer `query` (`best_window`); those that cannot hold a line
    leave. `cuts` remembers each cut and what each cut chunk's header adds, for calls with the
    same `tc`, `draw`, `query` and `positions` (a cut is the same for the same chunk, cost,
    share and base)."""
    n = len(ranked)
    shares = fair_shares(costs[:n], room - 2 * n, rank_weights(n))
    words = query_words(query)
    cuts = {} if cuts is None else cuts
    out: list[Chunk] = []
    for chunk, cost, share in zip(ranked, costs, shares, strict=False):
        if cost <= share:
            out.append(chunk)
            continue
        key = (chunk.id, chunk.text, cost, share, base)
        if key in cuts:
            part = cuts[key]
        else:
            part = _best_lines(chunk, cost, share, base, words, tc, draw, positions, cuts)
            cuts[key] = part
        if part is not None:
            out.append(part)
    return out


def _best_lines(
    chunk: Chunk,
    cost: int,
    share: int,
    base: int,
    words: list[str],
    tc: Any,
    draw: Callable[[list[Chunk]], str],
    positions: Positions,
    counts: dict[Any, Any],
) -> Chunk | None:
    """The part of `chunk` from the start of its window of lines (its `share` of tokens, in
    characters at the chunk's own tokens per character) that mentions the query's words most,
    cut so that `draw` of it alone counts at most `base + share`."""
    text = chunk.text
    chars = len(text) * share // max(cost, 1)
    offset = best_window(text, words, max(1, chars))
    span = positions.span(chunk)
    first = positions.first_line(chunk)
    line = None if first is None else first + text.count("\n", 0, offset)

    def place(kept: str) -> Chunk:
        kept = kept.rstrip()
        if span is None:
            return chunk.model_copy(update={"text": kept})
        return positions.moved(chunk, kept, span[1] + offset, line)

    rest = text[offset:]
    # Whole lines first. The guess: the share less what a result adds around its text (its
    # header, counted once per chunk), in characters at the text's own tokens per character;
    # usually right or one line off, so the search counts two or three renderings.
    ends = [m.start() for m in _NEWLINE.finditer(rest)] + [len(rest)]
    key = ("header", chunk.id, chunk.text, base)
    header = counts.get(key)
    if header is None:
        header = counts[key] = tc.count(draw([chunk.model_copy(update={"text": ""})])) - base
    room = len(text) * (share - header) / max(cost - header, 1)
    guess = bisect.bisect_right(ends, room)
    whole = largest_prefix(
        lambda k: draw([place(rest[: ends[k - 1]])]), len(ends), base + share, tc, lower=1,
        guess=max(guess, 1),
    )  # fmt: skip
    size = ends[whole.size - 1] if whole is not None else None
    if size is None:
        fitted = cut_text(rest, base + share, tc, render=lambda t: draw([place(t)]))
        size = None if fitted is None else fitted.size
    if size is None or not rest[:size].strip():
        return None
    return place(rest[:size])
