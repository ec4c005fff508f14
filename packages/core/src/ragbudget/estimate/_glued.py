"""Where ASCII letters meet non-ASCII characters that no token joins them to (for the floor).

A word as the estimate reads it (`_WORD_TABLE`: ASCII letters and any non-ASCII byte) may
hold characters that the tokenizers never join to the letters beside them: punctuation and
symbols of Latin-1 (`¿`, `§`), the soft hyphen, zero-width characters, an ellipsis glued to a
word, a Cyrillic look-alike letter. Where no token of an encoding holds the pair of a letter
and such a character side by side (read from its tokens: `EstimateData.glued`), one token
ends there and the next begins: `a¿a¿a¿...` is `a`, `¿`, `a`, `¿`, a token a character,
where the word as a whole looked like one unknown word and a token per `¿`.

`glued_parts` reads the unknown words holding non-ASCII characters as runs of ASCII letters
and runs of the rest between letters, and counts the boundaries between them that some token
spans. The floor prices each run of letters as an unknown ASCII word and each other run a
token (its characters no token holds alone at their block's cost), less a token per boundary
a token spans (one token spans each at most, joining the last token of one run to the first
of the next): `ragbudget.estimate._floor.other_tokens`. A run of letters right after such a
character, where no token of the encoding holds the pair, is cut off from anything before it:
its first token begins with its letters, as at a line's start, and it costs at least the
fewest tokens that spell it so (`cut_spelling`; `Tm£Tm£...` is `T`, `m`, `£`... in cl100k,
whose tokens beginning with `Tm` all hold a space before it). The coarser cuts of
the same kind, by bytes, are here too: `letter_cut_count` (a letter beside a byte no token
holds beside any letter) and `mixed_cuts` (Latin words with Cyrillic or Greek look-alikes).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from itertools import pairwise
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ragbudget.estimate._segments import Segments

__all__ = ["cut_spelling", "glued_parts", "glued_set", "letter_cut_count", "mixed_cuts"]

# a run of non-ASCII characters between two ASCII letters, with them (the letters overlap)
_INSIDE = re.compile("(?=([A-Za-z])([^\\x00-\\x7f]+)([A-Za-z]))")
# an ASCII letter right after a non-ASCII character that is no letter (or one of Latin-1's
# signs: `ª`, `µ`): a letter after a letter is mostly joined to it (`ét`), and checking those
# would cost European text time for nothing
_AFTER_MARK = re.compile("(?:[^\\w\\x00-\\x7f]|[\\x80-\\xbf])[A-Za-z]")
_RUN = re.compile("[A-Za-z]+")
_NOT_ASCII = bytes(range(0x80, 0x100))
_WIDE_TO_SPACE = bytes.maketrans(_NOT_ASCII, b" " * len(_NOT_ASCII))
_ASCII_BYTES = bytes(range(0x80))
# all bytes but the lead bytes of Greek and Cyrillic letters (U+0370-04FF)
_NOT_CYRILLIC_GREEK = bytes(b for b in range(256) if not 0xCD <= b <= 0xD3)


def glued_set(spec: str) -> frozenset[str]:
    """The pairs of one encoding's `EstimateData.glued` (2 characters each, concatenated)."""
    return frozenset(spec[i : i + 2] for i in range(0, len(spec) - 1, 2))


def glued_parts(
    joined: bytes, held: tuple[frozenset[str], ...]
) -> tuple[list[bytes], list[str], list[int]]:
    """The UTF-8 words `joined` (space-separated, of ASCII letters and non-ASCII characters
    only) read as runs: their runs of ASCII letters, their runs of non-ASCII characters with
    a letter on both sides (one at a word's edge may join what is beside the word: `”,`),
    and per encoding whose pairs `held` holds (`glued_set`), how many of the boundaries of
    those runs with their letters a token spans: at each other one token ends and the next
    begins."""
    inside = _INSIDE.findall(joined.decode("utf-8", "surrogatepass"))
    spanned = [
        sum(before + run[0] in pairs for before, run, _ in inside)
        + sum(run[-1] + after in pairs for _, run, after in inside)
        for pairs in held
    ]
    return joined.translate(_WIDE_TO_SPACE).split(), [run for _, run, _ in inside], spanned


def cut_spelling(
    joined: bytes,
    runs: Sequence[bytes],
    held: tuple[frozenset[str], ...],
    segments: Sequence[Segments],
) -> list[int]:
    """Per encoding whose pairs `held` holds (`glued_set`) and whose spelling `segments` has,
    what the runs of ASCII letters `runs` of the UTF-8 words `joined` (`glued_parts`' runs,
    in their order) cost at least: those right after a non-ASCII character that no token of
    the encoding holds beside their first letter the fewest tokens that spell them with
    nothing before them (`Segments.tokens`' `alone`: a token ends before their first letter),
    the others a token each (no token spans a cut, so their tokens are apart). Only
    characters that are no letter (`_AFTER_MARK`) are checked. 0 for an encoding
    where no run is so cut off (the caller's other prices stand)."""
    text = joined.decode("utf-8", "surrogatepass")
    found = [(m.end() - 1, m.group()) for m in _AFTER_MARK.finditer(text)]
    out = [0] * len(held)
    if not found or len(segments) != len(held):
        return out
    starts: list[int] = []
    for i, (pairs, spelling) in enumerate(zip(held, segments, strict=True)):
        cut = {at for at, pair in found if pair not in pairs}
        if cut:
            starts = starts or [m.start() for m in _RUN.finditer(text)]
            alone = [run for at, run in zip(starts, runs, strict=True) if at in cut]
            out[i] = spelling.tokens(alone, None, [True] * len(alone)) + len(runs) - len(alone)
    return out


def mixed_cuts(words: list[bytes], held: tuple[bytes, ...]) -> int:
    """The cuts between tokens in those of `words` that mix ASCII letters and Cyrillic or Greek
    letters, where two adjacent bytes are a pair no token holds (the most of the encodings
    whose pairs `held` holds, a bit each)."""
    mixed = [
        word
        for word in words
        if not word.isascii()
        and word.translate(None, _ASCII_BYTES) != word
        and word.translate(None, _NOT_CYRILLIC_GREEK)
    ]
    codes = [first << 8 | second for word in mixed for first, second in pairwise(word)]
    return max(sum(not bits[code >> 3] >> (code & 7) & 1 for code in codes) for bits in held)


def letter_cut_count(marked: bytes) -> int:
    """The cuts between tokens in words translated by a `Vocabulary.letter_cuts` table."""
    return marked.count(b"aL") + marked.count(b"Ca")
