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
the floor takes this bound instead (`ragbudget._estimate_floor.spelling_tokens`).
"""

from __future__ import annotations

import functools
import re
import string
from collections.abc import Sequence
from dataclasses import dataclass, field

__all__ = ["Runs", "Segments", "fewest"]

_CASES = bytes(
    ord("a") if 0x61 <= b <= 0x7A else ord("A") if 0x41 <= b <= 0x5A else 0x20 for b in range(256)
)
_CASE_PARTS = re.compile(rb"[A-Z]*[a-z]+|[A-Z]+[a-z]*")  # o200k's pieces of a word of letters
_CACHED_WORDS = 1 << 16
_LETTERS = [bytes((b,)) for b in string.ascii_letters.encode()]  # each a token of both


@functools.lru_cache(maxsize=_CACHED_WORDS)
def fewest(word: bytes, table: Runs) -> int:
    """The fewest runs of `table` that spell `word` (ASCII letters, not empty; every single
    letter is a run). Dynamic programming forward: from each start, the spelling grows one
    letter at a time while it is the beginning of some run, so a word costs a few lookups a
    letter. Cached: a document's names recur from chunk to chunk."""
    runs = table.runs
    size = len(word)
    if runs.get(word):
        return 1
    best: list[int] = list(range(size + 1))  # the fewest spelling word[:i]: a letter each at most
    for start in range(size):
        then = best[start] + 1
        end = start + 1
        while end <= size:
            run = runs.get(word[start:end])
            if run is None:  # no run begins so
                break
            if run and then < best[end]:
                best[end] = then
            end += 1
    return best[size]


class Runs:
    """The runs of ASCII letters of one encoding's tokens, with every beginning of one:
    `runs[s]` is True where `s` is a run, False where it only begins one; `missing`: the pairs
    of ASCII letters that no run holds, as little-endian 16-bit ints (`Segments.bound`).
    Hashed by identity (`fewest` caches by it; one per encoding)."""

    __slots__ = ("missing", "runs")
    runs: dict[bytes, bool]
    missing: frozenset[int]

    def __init__(self, shipped: str) -> None:
        found = shipped.encode().split()
        runs: dict[bytes, bool] = {}
        for run in found:
            for cut in range(1, len(run)):
                runs.setdefault(run[:cut], False)
        runs.update(dict.fromkeys(found, True))
        runs.update(dict.fromkeys(_LETTERS, True))
        self.runs = runs
        letters = string.ascii_letters.encode()
        self.missing = frozenset(
            a | b << 8 for a in letters for b in letters if not runs.get(bytes((a, b)))
        )


@dataclass(frozen=True)
class Segments:
    """The runs of ASCII letters that the tokens of one encoding hold (see the module
    docstring); `by_case`: the encoding's pre-splitting cuts a word where a lowercase letter
    meets a capital (o200k)."""

    shipped: str
    """The runs, space-separated (`EstimateData.letter_runs`), read into a set on first use."""
    by_case: bool = False
    _parsed: list[Runs] = field(default_factory=list, compare=False, repr=False)

    def _table(self) -> Runs:
        """The runs, read on first use."""
        if not self._parsed:
            self._parsed.append(Runs(self.shipped))
        return self._parsed[0]

    def tokens(self, words: Sequence[bytes]) -> int:
        """The fewest tokens that spell `words` (ASCII letters, none empty), summed."""
        if not self.shipped:
            return 0
        table = self._table()
        if self.by_case:
            words = _CASE_PARTS.findall(b" ".join(words))
        return sum(fewest(word, table) for word in words)

    def bound(self, words: Sequence[bytes]) -> int:
        """At least `tokens(words)`, from counts: spelling each word (or part, `by_case`) two
        letters at a time where a run holds the pair and one where none does, `s` letters
        alone among `n` cost `(n + s) / 2` tokens, and a letter stands alone only before a
        pair that no run holds or at the end."""
        if not self.shipped or not words:
            return 0
        missing = self._table().missing
        joined = b" ".join(words)
        size = len(joined)
        letters = size + 1 - len(words)
        parts = len(words)
        if self.by_case:
            parts += joined.translate(_CASES).count(b"aA")
        # every pair of adjacent bytes once: 16-bit ints from the first byte and the second
        view = memoryview(joined)
        first = view[: 2 * (size // 2)].cast("H")
        second = view[1 : 1 + 2 * ((size - 1) // 2)].cast("H")
        holes = sum(map(missing.__contains__, first)) + sum(map(missing.__contains__, second))
        return (letters + holes + parts) // 2
