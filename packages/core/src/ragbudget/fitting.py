"""The budget primitive: the largest rendering that fits, measured.

ragbudget's one idea, "the largest text whose *rendered* form fits the budget", in two shapes:

- `largest_prefix(render, upper, max_tokens, counter)`: the largest `k` (items, lines, results)
  whose rendering `render(k)` counts at most `max_tokens`. The rendering is counted as a whole,
  joins and envelope included, because BPE counts do not add up across joins.
- `cut_text(text, max_tokens, counter, render=...)`: the longest cut `text[:n]`, at the best
  paragraph/sentence/line/word boundary (else a character), whose rendering fits.

Both return a `Fitted`: where the cut is (`size`: items kept, or the cut position in the text),
the rendering that was measured, and its count. Nothing downstream parses the rendering to
learn where a cut happened. `least_budget` names the smallest budget whose own rendering fits,
for "use max_tokens >= N" advice when the budget is written into the rendering itself, and
`stated_count` is the one way to write a count into the text it counts (a `used_tokens`
field, a tag, a notice naming its budget).

The searches assume that a longer prefix never renders to fewer tokens, which holds for real
tokenizers and the estimate in practice; what they return is always measured, so the
guarantee (`tokens <= max_tokens`) never rests on that assumption.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ragbudget._checks import check_int
from ragbudget.counters import CounterSpec, TokenCounter, count_up_to, get_counter, stops_early

__all__ = [
    "Fitted",
    "boundaries",
    "cut_text",
    "largest_cut",
    "largest_fitting",
    "largest_prefix",
    "least_budget",
    "snap_to_boundary",
    "stated_count",
    "whole_fits",
]


@dataclass(frozen=True)
class Fitted:
    """A rendering that fits, and where it was cut."""

    size: int
    """Items kept (`largest_prefix`) or the cut position in the text (`cut_text`)."""
    text: str
    """The rendering, exactly as measured."""
    tokens: int
    """Its count by the counter; at most the budget."""


class _Measure:
    """Renders and counts each candidate once, remembering the best fitting one.

    A fits-check counts only up to the budget (`counters.count_up_to`: a counter that can stop
    there does); `size` counts a candidate whole when a search needs its real size."""

    def __init__(self, render: Callable[[int], str], max_tokens: int, tc: TokenCounter) -> None:
        self.render, self.max_tokens, self.tc = render, max_tokens, tc
        self.seen: dict[int, tuple[str, int]] = {}
        """Candidates counted: their rendering and count (any count over the budget may
        have stopped there: it is a floor)."""
        self.whole: set[int] = set()
        """Candidates counted whole."""

    def fits(self, k: int) -> bool:
        if k not in self.seen:
            text = self.render(k)
            self.seen[k] = (text, count_up_to(self.tc, text, self.max_tokens))
        return self.seen[k][1] <= self.max_tokens

    def size(self, k: int) -> int:
        if k not in self.seen:  # counted whole at once: a fits-check first would read it twice
            text = self.render(k)
            self.seen[k] = (text, self.tc.count(text))
        elif k not in self.whole and stops_early(self.tc) and not self.fits(k):
            text = self.seen[k][0]
            self.seen[k] = (text, self.tc.count(text))
        self.whole.add(k)
        return self.seen[k][1]

    def result(self, k: int) -> Fitted:
        self.fits(k)
        text, tokens = self.seen[k]
        return Fitted(k, text, tokens)


def _gallop(fits: Callable[[int], bool], lower: int, upper: int, guess: int) -> int | None:
    """Largest k in [lower, upper] with fits(k), for fits true up to the answer and false after
    it; None when not even `lower` fits. Gallops up or down from `guess` (steps of 1, 2, 4 ...)
    then bisects, so only candidates near the answer are tried: a guess off by one costs two."""
    k = min(max(guess, lower), upper)
    if fits(k):
        lo, hi, step = k, upper, 1
        while lo < upper:
            nxt = min(upper, lo + step)
            if not fits(nxt):
                hi = nxt - 1
                break
            lo, step = nxt, step * 2
        else:
            return lo
    else:
        hi, step = k - 1, 1
        while True:
            if hi < lower:
                return None
            nxt = max(lower, k - step)
            if fits(nxt):
                lo = nxt
                break
            hi, step = nxt - 1, step * 2
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo


def largest_prefix(
    render: Callable[[int], str],
    upper: int,
    max_tokens: int,
    counter: CounterSpec = None,
    *,
    lower: int = 0,
    guess: int | None = None,
) -> Fitted | None:
    """The largest `k` in `[lower, upper]` whose `render(k)` counts at most `max_tokens`.

    `render(k)` is the rendering keeping the first `k` items (results, lines, documents).
    `guess` (default `upper`) is where the search starts: a good guess (e.g. from stored
    counts) costs one or two counts. Returns None when not even `render(lower)` fits.

        >>> from ragbudget.fitting import largest_prefix
        >>> words = ["alpha", "beta", "gamma", "delta"]
        >>> largest_prefix(lambda k: " ".join(words[:k]), len(words), 10, "chars:1").size
        2
    """
    check_int("max_tokens", max_tokens, minimum=0)
    if upper < lower:
        msg = f"upper must be >= lower ({lower}), got {upper}"
        raise ValueError(msg)
    measure = _Measure(render, max_tokens, get_counter(counter))
    k = _gallop(measure.fits, lower, upper, upper if guess is None else guess)
    return None if k is None else measure.result(k)


def largest_fitting(
    fits: Callable[[int], bool], upper: int, *, lower: int = 0, guess: int | None = None
) -> int | None:
    """The predicate form of `largest_prefix`, for checks that are not one count (several
    limits at once, a whole JSON document re-rendered): the largest `k` in `[lower, upper]`
    with `fits(k)`, trying only candidates near the answer; None when not even `lower` fits."""
    if upper < lower:
        return None
    return _gallop(fits, lower, upper, upper if guess is None else guess)


# Boundary kinds in order of preference; a position is the index just after the boundary.
_BOUNDARIES: tuple[re.Pattern[str], ...] = (
    re.compile(r"\n[ \t]*\n"),  # paragraph
    re.compile(r"[.!?][\"')\]]*(?=\s)|[。！？]"),  # sentence
    re.compile(r"\n"),  # line
    re.compile(r"\s"),  # word
)
MIN_KEEP = 0.7
"""A boundary is used only if it keeps at least this share of what would fit."""
_PROBE_CHARS = 8
"""`cut_text` first counts a prefix of this many characters per token of the budget (twice
the budget on text of 4 characters a token), then of twice as many, until one is over."""


def boundaries(text: str, end: int) -> list[int]:
    """Cut positions in `text[:end + 1]` of the most preferred kind (paragraph, sentence, line,
    word) that has one keeping at least `MIN_KEEP` of `end`; empty when none does."""
    floor = int(end * MIN_KEEP)
    window = text[: end + 1]
    for pattern in _BOUNDARIES:
        found = [m.end() for m in pattern.finditer(window) if 0 < m.end() <= end]
        if found and found[-1] > floor:
            return found
    return []


def snap_to_boundary(text: str, end: int) -> int:
    """`end` moved back to the best boundary that keeps at least `MIN_KEEP` of it (else kept)."""
    if end >= len(text):
        return end
    points = boundaries(text, end)
    return points[-1] if points and points[-1] > int(end * MIN_KEEP) else end


def _longest_chars(measure: _Measure, n_max: int, limit: int) -> int:
    """The longest prefix length that fits (0 when none does), for renderings that grow with
    the prefix: secant steps on the measured tokens per character close in on it with few
    counts, then bisection finds it exactly (the boundary rule needs the exact length)."""
    base = measure.size(0)
    over = (k - 1 for k, (_, tokens) in measure.seen.items() if tokens > limit)
    lo, hi = 0, min([n_max, *over])  # below any prefix already counted over the limit
    guess = min(n_max, max(1, limit * 4))
    for _ in range(4):
        used = measure.size(guess)
        if used <= limit:
            lo = guess
        else:
            hi = guess - 1
        if lo >= hi:
            return lo
        per_char = max(used - base, 1) / guess
        guess = min(max(int((limit - base) / per_char * 0.99), lo + 1), hi)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if measure.fits(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo


def _probe_fits(measure: _Measure, size: int) -> bool:
    """Whether candidate `size` (all of a text) fits. Counts grow with the text, so a prefix
    over the budget means the whole is: prefixes of twice the budget or so and doubling are
    tried first, sparing the count of all of a long text (paging through a long line cut what
    was left again, `more` after `more`, and counted all of it each time)."""
    probe = (measure.max_tokens + 1) * _PROBE_CHARS
    if stops_early(measure.tc):
        probe = size  # the counter stops at the budget by itself
    while probe < size:
        if not measure.fits(probe):
            return False
        probe *= 2
    return measure.fits(size)


def whole_fits(text: str, max_tokens: int, counter: CounterSpec = None) -> bool:
    """Whether all of `text` counts at most `max_tokens`, without counting all of a long text
    that is over: a prefix of about twice the budget, then of twice as many characters, is
    counted first, and any one over says no (a counter that stops at the budget by itself,
    `counters.stops_early`, is asked once).

        >>> from ragbudget.fitting import whole_fits
        >>> [whole_fits("One. Two three.", budget, "chars:1") for budget in (15, 14)]
        [True, False]
    """
    check_int("max_tokens", max_tokens, minimum=0)
    measure = _Measure(lambda n: text[:n], max_tokens, get_counter(counter))
    return _probe_fits(measure, len(text))


def cut_text(
    text: str,
    max_tokens: int,
    counter: CounterSpec = None,
    *,
    render: Callable[[str], str] | None = None,
    at_boundary: bool = True,
) -> Fitted | None:
    """The longest cut `text[:n]` whose rendering `render(text[:n])` counts <= `max_tokens`.

    With `at_boundary`, the cut is at the most preferred boundary (paragraph, then sentence,
    line, word) that keeps at least 70% of what would fit, else at a character. `render`
    (default: the text itself) adds what goes around it: a marker, a header, an envelope.
    `Fitted.size` is the cut position `n` (`len(text)` when the whole text fits). Returns None
    when not even `render("")` fits.

        >>> from ragbudget.fitting import cut_text
        >>> cut_text("One. Two three. Four five six.", 18, "chars:1").size
        15
    """
    check_int("max_tokens", max_tokens, minimum=0)
    tc = get_counter(counter)
    wrap = render if render is not None else _same

    def render_prefix(n: int) -> str:
        return wrap(text[:n])

    measure = _Measure(render_prefix, max_tokens, tc)
    if _probe_fits(measure, len(text)):
        return measure.result(len(text))
    if not measure.fits(0):
        return None
    # No real tokenizer makes a token of more than a few dozen characters: past this bound,
    # counting would only read text that cannot fit.
    n_max = min(len(text) - 1, (max_tokens + 1) * 64)
    longest = _longest_chars(measure, n_max, max_tokens)
    points = boundaries(text, longest) if at_boundary else []
    if not points:  # no boundary keeps enough: any character will do
        return measure.result(longest)
    # The largest boundary of the preferred kind that fits (all do, for a monotone counter).
    j = _gallop(lambda i: measure.fits(points[i]), 0, len(points) - 1, len(points) - 1)
    return measure.result(points[j] if j is not None else 0)


def largest_cut(
    text: str, points: Sequence[int], max_tokens: int, counter: CounterSpec = None
) -> Fitted | None:
    """The largest cut `text[:p]`, `p` one of `points` (increasing positions, e.g. line ends),
    that counts at most `max_tokens`; None when not even the first point fits.

    Secant steps on the measured tokens per character of the prefixes counted so far pick the
    next point, so a long text with a budget far below it costs a few counts of about the
    budget's size (not one per line, nor a gallop from a first guess); a counter that stops at
    the limit (`counters.stops_early`) reads no further than the budget for prefixes over it.

        >>> from ragbudget.fitting import largest_cut
        >>> largest_cut("ab\ncd\nef\n", [3, 6, 9], 7, "chars:1").size
        6
    """
    check_int("max_tokens", max_tokens, minimum=0)
    if not points:
        return None
    measure = _Measure(lambda p: text[:p], max_tokens, get_counter(counter))
    lo, hi = -1, len(points)  # points[lo] fits (-1: none known), points[hi] is over
    target = min(points[-1], max(1, (max_tokens + 1) * 4))
    for _ in range(6):
        i = min(max(bisect_right(points, target) - 1, lo + 1), hi - 1)
        used = measure.size(points[i])
        if used <= max_tokens:
            lo = i
        else:
            hi = i
        if hi - lo <= 1:
            break
        # Aim at the budget from this prefix's tokens per character: from one that fits, at
        # its end plus what is left; from one over, a little short of where the budget is.
        per_char = max(used, 1) / max(points[i], 1)
        if used <= max_tokens:
            target = points[i] + int((max_tokens - used) / per_char)
        else:
            target = int(max_tokens / per_char * 0.998)
    if hi - lo > 1:
        guess = bisect_right(points, target) - 1
        found = _gallop(lambda j: measure.fits(points[j]), lo + 1, hi - 1, guess)
        lo = lo if found is None else found
    return None if lo < 0 else measure.result(points[lo])


def _same(text: str) -> str:
    return text


def stated_count(
    size_at: Callable[[int], int], start: int, *, holds: bool = False, rounds: int = 8
) -> tuple[int, int]:
    """The number to write into a rendering that states a count of itself, and its count.

    A rendering can carry its own token count (a `used_tokens` field, a node's tag) or the
    budget it must fit (a notice saying "8,192-token budget"): its size then depends on the
    number written in it. `size_at(n)` counts the rendering with `n` written. From `start`,
    `n` takes the count found until the rendering counts exactly `n` (with `holds`: at most
    `n`, a budget that holds its own rendering); only the number's digits change, so a round
    or two suffice. Returns `(n, size_at(n))`, both measured: when `rounds` run out (a count
    that alternates between two values), they differ and the second is the rendering's count.

        >>> from ragbudget.fitting import stated_count
        >>> stated_count(lambda n: len(f"this line counts {n} characters"), 0)
        (30, 30)
    """
    check_int("start", start, minimum=0)
    check_int("rounds", rounds, minimum=0)
    n = start
    size = size_at(n)
    for _ in range(rounds):
        if size == n or (holds and size < n):
            break
        n, size = size, size_at(size)
    return n, size


def least_budget(needed: int, size_at: Callable[[int], int]) -> int:
    """The least budget whose own smallest rendering fits, for "use max_tokens >= N" advice.

    `needed` is the smallest rendering's size at the budget asked for and `size_at(m)` its size
    at budget `m`: when the budget is written into the rendering (a notice, a cut marker), a
    larger number can cost a token more (`stated_count` with `holds`).
    """
    n, size = stated_count(size_at, needed, holds=True)
    return max(n, size)
