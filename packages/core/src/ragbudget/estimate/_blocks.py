"""What the characters that no token holds alone cost, by UTF-8 block (for the floor).

Read from `EstimateData.char_costs` (measured on each encoding's vocabulary by
`tools/estimator/calibrate.py`): most such characters cost their UTF-8 length, a token per
byte, so `BlockCosts.cost` sums the UTF-8 length less what the cheaper blocks save, in a few
C-level passes. And the least a text costs where characters that are a token of their own
beside ASCII cut it (`Isolated`), and the pairs of adjacent characters no token holds
(`cuts`).
"""

from __future__ import annotations

import re
import string
from dataclasses import dataclass, field
from itertools import pairwise, repeat

__all__ = ["BlockCosts", "Isolated", "block_costs", "cuts", "held_codes", "pair_code"]


def block_costs(runs: dict[str, int]) -> dict[bytes, int]:
    """UTF-8 block prefix (all bytes but the last: 64 code points) -> what its characters that
    are not single tokens cost, from runs of blocks (`EstimateData.char_costs`)."""
    starts = [*sorted(map(ord, runs)), 0x110000]
    out: dict[bytes, int] = {}
    for start, end in pairwise(starts):
        cost = runs[chr(start)]
        for code in range(start, end, 64):
            if not 0xD800 <= code < 0xE000:
                out[chr(code).encode()[:-1]] = cost
    return out


_PREFIX = re.compile(rb"[\xe0-\xef][\x80-\xbf]|[\xf0-\xf4][\x80-\xbf]{2}|[\xc2-\xdf]")
"""The UTF-8 block prefix of each non-ASCII character."""
_FAR = re.compile("[\U00010000-\U0010ffff]+")  # characters outside the BMP
_FAR_CACHED = 4096
_BELOW_FOUR = bytes(range(0xF0))  # deleted, they leave the leads of 4-byte characters
_SURROGATE = re.compile(rb"\xed[\xa0-\xbf]")  # lone surrogates (text with surrogatepass)


class _FarSaving(dict[str, int]):
    """Character outside the BMP -> its 4 bytes less its block's cost (1 where `table` has no
    entry): computed when first met, at most _FAR_CACHED remembered."""

    def __init__(self, table: dict[bytes, int]) -> None:
        super().__init__()
        self.table = table

    def __missing__(self, char: str) -> int:
        if len(self) >= _FAR_CACHED:
            self.clear()
        save = self[char] = 4 - self.table.get(char.encode()[:-1], 1)
        return save


@dataclass(frozen=True)
class BlockCosts:
    """What the characters no token holds alone cost in one encoding, by UTF-8 block (64 code
    points sharing all but their last byte; 1 where `table` has no entry), summed in a few
    C-level passes: most such characters cost their UTF-8 length (a token per byte), so the
    sum is the UTF-8 length less what the cheaper ones save."""

    table: dict[bytes, int]
    saving_one: re.Pattern[str]
    """Characters of the Basic Multilingual Plane costing one token less than their bytes."""
    saving_two: re.Pattern[str] | None
    """... two less (surrogates left out: they are counted on the bytes), if any."""
    exact: bool
    """False if some block costs more than its bytes, or none of the BMP is free, or lone
    surrogates have a cost: then `cost` prices block by block."""
    far_saving: _FarSaving = field(init=False, compare=False, hash=False)
    """Characters outside the BMP -> what they save (computed on first use, remembered)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "far_saving", _FarSaving(self.table))

    @classmethod
    def build(cls, table: dict[bytes, int]) -> BlockCosts:
        """Group the blocks of the Basic Multilingual Plane by what they save."""
        saving: dict[int, list[tuple[int, int]]] = {}
        exact = True
        for code in range(0x80, 0x10000, 64):
            if 0xD800 <= code < 0xE000:
                continue
            prefix = chr(code).encode()[:-1]
            save = len(prefix) + 1 - table.get(prefix, 1)
            exact &= 0 <= save <= 2
            spans = saving.setdefault(save, [])
            if spans and spans[-1][1] == code:
                spans[-1] = (spans[-1][0], code + 64)
            else:
                spans.append((code, code + 64))
        exact &= all(cost <= 4 for p, cost in table.items() if len(p) == 3)  # 4-byte ones
        exact &= not any(_SURROGATE.fullmatch(p) for p in table)  # counted as costing 1

        def pattern(save: int) -> re.Pattern[str]:
            spans = saving.get(save, [])
            ranges = "".join(f"{chr(a)}-{chr(b - 1)}" for a, b in spans)
            return re.compile(f"[{ranges}]+" if spans else "(?!)")

        two = pattern(2) if saving.get(2) else None
        return cls(table, pattern(1), two, exact)

    def cost(self, residue: str) -> int:
        """What the characters of `residue` (none ASCII) cost."""
        data = residue.encode("utf-8", "surrogatepass")
        if not self.exact:
            return sum(map(self.table.get, _PREFIX.findall(data), repeat(1)))
        total = len(data) - len(residue) + len(self.saving_one.sub("", residue))
        if self.saving_two is not None:
            total -= 2 * (len(residue) - len(self.saving_two.sub("", residue)))
        if b"\xed" in data:  # lone surrogates cost 1 (no entry), 2 less than their 3 bytes
            total -= 2 * len(_SURROGATE.findall(data))
        if data.translate(None, _BELOW_FOUR):  # characters outside the BMP (emoji...)
            far = "".join(_FAR.findall(residue))
            total -= sum(map(self.far_saving.__getitem__, far))
        return total


@dataclass(frozen=True)
class Isolated:
    """The non-ASCII characters that are one token of an encoding beside ASCII, whatever the
    ASCII (`EstimateData.isolated`: single tokens no merge joins to ASCII; a variation
    selector, U+FE0F, in both encodings). No token spans one of them there, so a text costs a
    token per run of them with ASCII or an end on both sides, and one per stretch of text
    between such runs, at least (`h\\ufe0fe\\ufe0fy` is 5 tokens)."""

    runs: re.Pattern[str]
    """A run of them with ASCII or an end on both sides."""

    @classmethod
    def build(cls, chars: str) -> Isolated:
        if not chars:
            return cls(re.compile("(?!)"))
        them = "".join(map(re.escape, sorted(chars)))
        # one of them first, for the scan, then no other non-ASCII character before it
        return cls(re.compile(f"[{them}](?<![^\\x00-\\x7f].)[{them}]*(?![^\\x00-\\x7f])"))

    def tokens(self, text: str) -> int:
        """The least `text` costs by these runs and the stretches between them (0 without
        them)."""
        parts = self.runs.split(text)
        if len(parts) == 1:
            return 0
        return 2 * len(parts) - 1 - parts.count("")


def pair_code(first: str, second: str) -> int:
    """Two characters as one int: what UTF-32 (little-endian) reads as a 64-bit integer."""
    return ord(first) | ord(second) << 32


def held_codes(held: str) -> frozenset[int]:
    """The pairs of `held` (2 characters each, concatenated) and every pair of ASCII letters
    as `pair_code`s; none where `held` is empty (the target has no such feature)."""
    if not held:
        return frozenset()
    return frozenset(map(pair_code, held[::2], held[1::2])) | _ASCII_PAIRS


_ASCII_PAIRS = frozenset(
    pair_code(a, b) for a in string.ascii_letters for b in string.ascii_letters
)
"""Pairs of ASCII letters, never cuts: the feature is about the non-ASCII characters."""


def cuts(words: list[bytes], held: frozenset[int]) -> int:
    """How many pairs of adjacent characters in `words` (UTF-8, none empty) are not in `held`
    (`pair_code`s): each is a cut between two tokens, where no token of the target holds the
    pair (`ىي` and `جۇ` in Uyghur, whose words o200k makes a token per one or two letters).
    0 where `held` is empty: the target has no such feature.

    In C-level passes, about 60 ns a pair: the words, joined by spaces, as UTF-32 read as 64-bit
    integers twice, from their first character and from their second, are every pair once."""
    if not words or not held:
        return 0
    text = b" ".join(words).decode("utf-8", "surrogatepass")
    size = len(text)
    data = memoryview(text.encode("utf-32-le", "surrogatepass"))
    first = data[: 8 * (size // 2)].cast("Q")
    second = data[4 : 4 + 8 * ((size - 1) // 2)].cast("Q")
    inside = size + 1 - 2 * len(words)  # pairs within the words (2 per space are not)
    return inside - sum(map(held.__contains__, first)) - sum(map(held.__contains__, second))
