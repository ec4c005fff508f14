"""The fewest tokens that can spell a word of ASCII letters (for the floor).

A byte-pair tokenizer spells each word with tokens of its vocabulary, so a word costs at least
the fewest of them that spell it. The letters of a token inside a word are a run of ASCII
letters that the token holds whole: the runs of every token of an encoding are shipped
(`EstimateData.letter_runs`: each token's longest runs of ASCII letters, 56,045 for cl100k and
88,251 for o200k), and `fewest` finds the least number of them that spell a word, by dynamic
programming. Any token a tokenizer can use inside the word is among them (a token at the
word's start may hold a space or a symbol before it, whose letters are still one of its runs),
so this is never more than the tokenizer's count: a lower bound, not an estimate. o200k's
pre-splitting also cuts a word where a lowercase letter meets a capital (`getValue` is `get`
and `Value`); no token spans that cut, so for o200k each part is spelled alone.

The floor's other rules price a word the estimate's vocabulary lacks by its rare letter pairs
and case changes, which natural words meet; where they read as words what neither encoding
spells in few tokens (source code reversed, `THURSDAY` in capitals, words in random case),
the floor takes this bound instead (`spelling_tokens`, below).
"""

from __future__ import annotations

import base64
import functools
import re
import string
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import accumulate, repeat
from operator import add, mod, neg
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ragbudget.estimate._text import Vocabulary

__all__ = [
    "Runs",
    "Segments",
    "fewest",
    "spelled",
    "spelling_bound",
    "spelling_bounds",
    "spelling_tokens",
]

_CASE_PARTS = re.compile(rb"[A-Z]*[a-z]+|[A-Z]+[a-z]*")  # o200k's pieces of a word of letters
_CACHED_WORDS = 1 << 16
# `Segments.tokens` with a limit spells slices of 16 words or an eighth of them, whichever more
_SLICE, _SLICES = 16, 8
_LETTERS = [bytes((b,)) for b in string.ascii_letters.encode()]  # each a token of both
_BEGINS, _AT_START, _ANYWHERE = 0, 1, 2  # `Runs.runs`: what a string of letters is


@functools.lru_cache(maxsize=_CACHED_WORDS)
def fewest(word: bytes, table: Runs, alone: bool = False) -> int:
    """The fewest runs of `table` that spell `word` (ASCII letters, not empty; every single
    letter is a run). Dynamic programming forward: from each start, the spelling grows one
    letter at a time while it is the beginning of some run, so a word costs a few lookups a
    letter. `alone`: nothing stands before the word in its piece (a line's start), so its
    first token too begins with its letters. Cached: a document's names recur from chunk to
    chunk."""
    runs = table.runs
    size = len(word)
    first = runs.get(word)
    if first == _ANYWHERE or (first and not alone):
        return 1
    opening = _ANYWHERE if alone else _AT_START  # what may spell the word's first letters
    best: list[int] = list(range(size + 1))  # the fewest spelling word[:i]: a letter each at most
    for start in range(size):
        then = best[start] + 1
        end = start + 1
        while end <= size:
            run = runs.get(word[start:end])
            if run is None:  # no run begins so
                break
            # past the word's first letters only the letters a token begins with
            if then < best[end] and (run == _ANYWHERE or (not start and run >= opening)):
                best[end] = then
            end += 1
    return best[size]


class Runs:
    """The runs of ASCII letters of one encoding's tokens, with every beginning of one:
    `runs[s]` is `_ANYWHERE` where some token begins with the letters `s` (`Tat`, `name's`),
    `_AT_START` where only tokens with a space or a symbol before them hold them (` Tat`,
    `.name`), which spell a word's first letters only (a token past them begins with its
    letters: the pre-splitting puts nothing else there), and `_BEGINS` (0) where `s` only
    begins a run; `pair_cost` and `four_saving`: what 2 bytes cost at most and what 4 letters
    of an `_ANYWHERE` run save, by their ints (`_code`; `Segments.bound`, which spells with
    those alone). `pure`: which runs are `_ANYWHERE`, a bit each in the order of `shipped`,
    base64 (`EstimateData.pure_runs`); without it, every run is.
    Hashed by identity (`fewest` caches by it; one per encoding)."""

    __slots__ = ("four_saving", "pair_cost", "runs")
    runs: dict[bytes, int]
    pair_cost: list[int]
    four_saving: dict[int, int]

    def __init__(self, shipped: str, pure: str = "") -> None:
        found = shipped.encode().split()
        runs = dict.fromkeys({run[:cut] for run in found for cut in range(1, len(run))}, _BEGINS)
        if pure:
            bits = base64.b64decode(pure)
            kinds = (
                _ANYWHERE if bits[i >> 3] >> (i & 7) & 1 else _AT_START for i in range(len(found))
            )
            runs.update(zip(found, kinds, strict=True))
        else:
            runs.update(dict.fromkeys(found, _ANYWHERE))
        runs.update(dict.fromkeys(_LETTERS, _ANYWHERE))
        self.runs = runs
        cost = [2] * 0x10000  # two bytes as a 16-bit int -> their tokens at most
        cost[_code(b"  ")] = 0  # padding
        for a in string.ascii_letters:
            cost[_code(f"{a} ".encode())] = 1  # a letter, then padding
            for b in string.ascii_letters:
                pair = f"{a}{b}".encode()
                cost[_code(pair)] = 1 if runs.get(pair) == _ANYWHERE else 2
        self.pair_cost = cost
        self.four_saving = {  # 4 letters a token begins with: a token instead of their 2 pairs
            _code(run): cost[_code(run[:2])] + cost[_code(run[2:])] - 1
            for run in found
            if len(run) == 4 and runs[run] == _ANYWHERE
        }


def _code(data: bytes) -> int:
    """`data` as the int `memoryview.cast` reads (the machine's byte order)."""
    return int.from_bytes(data, sys.byteorder)


@dataclass(frozen=True)
class Segments:
    """The runs of ASCII letters that the tokens of one encoding hold (see the module
    docstring); `by_case`: the encoding's pre-splitting cuts a word where a lowercase letter
    meets a capital (o200k)."""

    shipped: str
    """The runs, space-separated (`EstimateData.letter_runs`), read into `table` on first use."""
    by_case: bool = False
    pure: str = ""
    """Which runs begin a token (`EstimateData.pure_runs`; `Runs`)."""

    @functools.cached_property
    def table(self) -> Runs:
        """The runs, read on first use (a process that never spells never reads them)."""
        return Runs(self.shipped, self.pure)

    def tokens(
        self,
        words: Sequence[bytes],
        limit: int | None = None,
        alone: Sequence[bool] = (),
    ) -> int:
        """The fewest tokens that spell `words` (ASCII letters, none empty), summed; those
        `alone` marks (aligned with `words`: at a line's start) with nothing before them in
        their piece (`fewest`'s `alone`), as each part of a word but its first where
        the encoding cuts words by case (`by_case`). With a `limit`, a sum of `limit` or less
        may stand for any that is not more: the words are spelled a slice at a time, and the
        spelling stops where what is spelled plus the bound of the rest (`bound`, which
        spells with runs that begin a token alone) is within `limit`."""
        if not self.shipped:
            return 0
        table = self.table
        flags = list(alone) or [False] * len(words)
        if self.by_case:
            cut = [_CASE_PARTS.findall(word) for word in words]
            words = [part for parts in cut for part in parts]
            flags = [
                bool(i) or f for parts, f in zip(cut, flags, strict=True) for i in range(len(parts))
            ]
        if limit is None:
            return sum(map(fewest, words, repeat(table), flags))
        total = 0
        step = max(_SLICE, len(words) // _SLICES)
        view, offsets = _layout(words) if len(words) > step else (memoryview(b""), [])
        for start in range(0, len(words), step):
            if start and total + _view_bound(view[offsets[start] :], table) <= limit:
                break
            end = start + step
            total += sum(map(fewest, words[start:end], repeat(table), flags[start:end]))
        return total

    def bound(self, words: Sequence[bytes]) -> int:
        """At least `tokens(words)`, from counts: one spelling of each word (or part,
        `by_case`), 4 letters at a time where a run holds them, else 2 at a time, a token
        where a run holds the 2 letters and 2 where none does. Each word is laid from a
        multiple of 4 bytes, padded with spaces, so its fours and pairs are the 32-bit and
        16-bit ints of the bytes, summed in C-level passes."""
        if not self.shipped or not words:
            return 0
        if self.by_case:
            words = _CASE_PARTS.findall(b" ".join(words))
        return _bound(words, self.table)


def _bound(words: Sequence[bytes], table: Runs) -> int:
    """`Segments.bound` of `words` already cut as the encoding's pre-splitting cuts them."""
    return _view_bound(_layout(words)[0], table)


def _layout(words: Sequence[bytes]) -> tuple[memoryview, list[int]]:
    """`words` laid end to end, each from a multiple of 4 bytes (padded with spaces), and where
    each begins: the bound of the words from the i-th on is that of the view from offsets[i]."""
    sizes = list(map(len, words))
    widths = list(map(add, sizes, map(mod, map(neg, sizes), repeat(4))))
    padded = b"".join(map(bytes.ljust, words, widths))
    return memoryview(padded), list(accumulate(widths, initial=0))


def _view_bound(view: memoryview, table: Runs) -> int:
    """`_bound` of words laid out by `_layout`."""
    pairs = sum(map(table.pair_cost.__getitem__, view.cast("H")))
    return pairs - sum(map(table.four_saving.get, view.cast("I"), repeat(0)))


# unknown ASCII words cost their spelling where they are 1 in 2 of the words or more: text the
# vocabulary knows little of (the spelling costs a few microseconds a word)
_SPELLED_SHARE = 2


def spelled(unknown: int, words: int) -> bool:
    """Whether `unknown` unknown ASCII words among `words` words cost their spelling
    (`spelling_tokens`): 1 or more, half of the words or more."""
    return unknown > 0 and unknown * _SPELLED_SHARE >= words


def spelling_tokens(
    unknown: Sequence[bytes],
    vocab: Vocabulary,
    limit: int | None = None,
    starts: Sequence[bytes] = (),
    bounds: Sequence[int] | None = None,
) -> int:
    """The fewest tokens that spell the unknown ASCII words `unknown`, the most of any
    encoding `vocab` covers (`Segments`; 0 without its data), those of them `starts`
    (one each time one stands at a line's start: `_floor.line_starts`) spelled with
    nothing before them (`Segments.tokens`' `alone`). The encodings in the order of their `bound`,
    which spares spelling with one whose bound is already reached. With a `limit`, a count
    of `limit` or less may stand for any that is not more (`Segments.tokens`): the estimate
    needs the spelling only where it exceeds what lifts the floor over the model. `bounds`:
    `spelling_bounds`, if the caller has them."""
    best = 0
    left = Counter(starts)  # the words at a line's start: as many of their occurrences
    alone = []
    for word in unknown:
        alone.append(left[word] > 0)
        left[word] -= 1
    if bounds is None:
        bounds = spelling_bounds(unknown, vocab)
    ordered = sorted(zip(bounds, vocab.segments, strict=True), key=lambda item: -item[0])
    for bound, segments in ordered:
        reached = best if limit is None else max(best, limit)
        if bound <= reached:
            break
        best = max(best, segments.tokens(unknown, None if limit is None else reached, alone))
    return best


def spelling_bound(unknown: Sequence[bytes], vocab: Vocabulary) -> int:
    """At least `spelling_tokens`, from counts (`Segments.bound`)."""
    return max(spelling_bounds(unknown, vocab), default=0)


def spelling_bounds(unknown: Sequence[bytes], vocab: Vocabulary) -> list[int]:
    """`Segments.bound` of `unknown` for each encoding `vocab` covers, in its order."""
    return [segments.bound(unknown) for segments in vocab.segments]
