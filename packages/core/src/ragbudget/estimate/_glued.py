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
absorbs. The floor prices each run of letters as an unknown ASCII word and each other run a
token (its characters no token holds alone at their block's cost), less a token per run that
a token from before it may cover whole, so that no token begins in it (`Glued.absorbs`: that
token holds the characters on both sides of the boundary and, where the run is longer than
one character, its second character too; read from the tokens with one character of context,
`EstimateData.glued_context`): `ragbudget.estimate._floor.other_tokens`. A token holding the
pair alone does not do: `ix\u00adix\u00ad...` is `ix`, `\u00ad`, `ix`... though both
encodings hold `\u00adi` as a token, and `u\ufeffu\ufeff...` is a token a character though
tokens hold `\ufeffusing`. A run of letters right after such a
character, where no token of the encoding holds the pair, is cut off from anything before it:
its first token begins with its letters, as at a line's start, and it costs at least the
fewest tokens that spell it so (`cut_spelling`; `Tm£Tm£...` is `T`, `m`, `£`... in cl100k,
whose tokens beginning with `Tm` all hold a space before it). The coarser cuts of
the same kind, by bytes, are here too: `letter_cut_count` (a letter beside a byte no token
holds beside any letter) and `mixed_cuts` (Latin words with Cyrillic or Greek look-alikes).
"""

from __future__ import annotations

import functools
import re
import string
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import TYPE_CHECKING

from ragbudget.estimate._blocks import cuts, held_codes

if TYPE_CHECKING:
    from collections.abc import Callable

    from ragbudget.estimate._segments import Segments
    from ragbudget.estimate._text import Vocabulary

    Price = Callable[[Sequence[bytes], Vocabulary], int]

__all__ = [
    "Glued",
    "cut_spelling",
    "glued_parts",
    "glued_set",
    "glued_tokens",
    "letter_cut_count",
    "mixed_cuts",
    "pair_cuts",
]

# a run of non-ASCII characters between two ASCII letters
_INSIDE = re.compile("(?<=[A-Za-z])[^\\x00-\\x7f]+(?=[A-Za-z])")
# an ASCII letter right after a non-ASCII character that is no letter (or one of Latin-1's
# signs: `ª`, `µ`): a letter after a letter is mostly joined to it (`ét`), and checking those
# would cost European text time for nothing
_AFTER_MARK = re.compile("(?:[^\\w\\x00-\\x7f]|[\\x80-\\xbf])[A-Za-z]")
_RUN = re.compile("[A-Za-z]+")
# a pair of characters with one that is no single token (U+0000 in `pair_cuts`) first or last
_BESIDE_OTHER = re.compile("(?=\x00[^ ]|[^ \x00]\x00)")
# UTF-8 bytes -> "s" for an ASCII symbol, "c" for a continuation byte (the last of a non-ASCII
# character), "l" for a lead byte (its first), "x" for the rest: `cs` and `sl` are where a
# non-ASCII character is right before or after an ASCII symbol (`pair_cuts`)
_SIDES = bytes(
    ord(
        "s"
        if chr(b) in string.punctuation
        else "c"
        if 0x80 <= b < 0xC0
        else "l"
        if b >= 0xC0
        else "x"
    )
    for b in range(256)
)
_NOT_WORD = re.compile(r"[^\w\x00-\x7f]|[\x80-\xbf]")  # no letter, or Latin-1's signs
# where an ASCII letter and a non-ASCII character meet, either first (`pair_cuts`)
_GLUED_PAIR = re.compile("(?=[A-Za-z][^\\x00-\\x7f]|[^\\x00-\\x7f][A-Za-z])")
_NOT_ASCII = bytes(range(0x80, 0x100))
_WIDE_TO_SPACE = bytes.maketrans(_NOT_ASCII, b" " * len(_NOT_ASCII))
_ASCII_BYTES = bytes(range(0x80))
# all bytes but the lead bytes of Greek and Cyrillic letters (U+0370-04FF)
_NOT_CYRILLIC_GREEK = bytes(b for b in range(256) if not 0xCD <= b <= 0xD3)


def glued_set(spec: str) -> frozenset[str]:
    """The pairs of one encoding's `EstimateData.glued` (2 characters each, concatenated)."""
    return frozenset(spec[i : i + 2] for i in range(0, len(spec) - 1, 2))


@dataclass(frozen=True)
class Glued:
    """One encoding's pairs of an ASCII letter and a non-ASCII character that its tokens hold
    (`EstimateData.glued`), and their context (`EstimateData.glued_context`)."""

    pairs: frozenset[str]
    """The pairs some token holds side by side."""
    whole: frozenset[str] = frozenset()
    """The pairs that are a token of their own."""
    windows: frozenset[str] = frozenset()
    """The 3 characters around each pair in a token (the character before it or after it)."""
    held: frozenset[int] = frozenset()
    """The pairs of adjacent characters of a word, one non-ASCII at least, that some token
    holds, and every pair of ASCII letters, as `pair_code`s (`pair_cuts`)."""

    @classmethod
    def read(cls, spec: str, context: str = "") -> Glued:
        """From `EstimateData.glued` and `.glued_context` (the whole pairs, 2 characters each,
        U+0000, the windows, 3 characters each, U+0000, the pairs tokens hold, 2 each)."""
        whole, _, rest = context.partition("\x00")
        windows, _, held = rest.partition("\x00")
        return cls(
            glued_set(spec),
            glued_set(whole),
            frozenset(windows[i : i + 3] for i in range(0, len(windows) - 2, 3)),
            held_codes(held),
        )

    def joins(self, text: str, at: int) -> bool:
        """Whether a token may hold the pair at `at` of `text` where it is: the pair is a
        token, or a token holds it with the character before it or after it. True for a
        pair that is not one of `pairs` (`pair_cuts` counts those apart)."""
        pair = text[at : at + 2]
        return (
            pair not in self.pairs
            or pair in self.whole
            or text[at : at + 3] in self.windows
            or (at > 0 and text[at - 1 : at + 2] in self.windows)
        )

    def absorbs(self, text: str, at: int, end: int) -> bool:
        """Whether a token from before the run `text[at:end]` may cover all of it: it holds
        the pair at `at - 1` and, with the run longer than one character, the run's second
        character; with one, the pair is a token, or a token holds one character beside it."""
        pair = text[at - 1 : at + 1]
        if pair not in self.pairs:
            return False
        if end - at > 1:
            return text[at - 1 : at + 2] in self.windows
        return (
            pair in self.whole
            or text[at - 1 : at + 2] in self.windows
            or (at > 1 and text[at - 2 : at + 1] in self.windows)
        )


def glued_parts(joined: bytes, held: tuple[Glued, ...]) -> tuple[list[bytes], list[str], list[int]]:
    """The UTF-8 words `joined` (space-separated, of ASCII letters and non-ASCII characters
    only) read as runs: their runs of ASCII letters, their runs of non-ASCII characters with
    a letter on both sides (one at a word's edge may join what is beside the word: `”,`),
    and per encoding of `held`, how many of those runs and of the runs of letters after them
    a token from before may cover whole (`Glued.absorbs`): in each other one a token begins."""
    text = joined.decode("utf-8", "surrogatepass")
    found = [m.span() for m in _INSIDE.finditer(text)]
    ends = [_RUN.match(text, end).end() for _, end in found]  # type: ignore[union-attr]
    absorbed = [
        sum(glued.absorbs(text, at, end) for at, end in found)
        + sum(glued.absorbs(text, end, last) for (_, end), last in zip(found, ends, strict=True))
        for glued in held
    ]
    inside = [text[at:end] for at, end in found]
    return joined.translate(_WIDE_TO_SPACE).split(), inside, absorbed


def cut_spelling(
    joined: bytes,
    runs: Sequence[bytes],
    held: tuple[Glued, ...],
    segments: Sequence[Segments],
) -> list[int]:
    """Per encoding whose pairs `held` holds (`Glued.pairs`) and whose spelling `segments` has,
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
    for i, (glued, spelling) in enumerate(zip(held, segments, strict=True)):
        cut = {at for at, pair in found if pair not in glued.pairs}
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


def glued_tokens(other: list[bytes], chars: str, vocab: Vocabulary, price: Price) -> int:
    """What the unknown non-ASCII words `other` (their non-ASCII characters `chars`) cost at
    least by their runs of ASCII letters and of the rest (`glued_parts`, see
    `ragbudget.estimate._floor.other_tokens`; `price` prices runs of letters as unknown ASCII
    words), where a character is no letter (punctuation, symbols, zero-width and format
    characters, marks, selectors) or one of Latin-1's signs (`ª`, `µ`, `²`): between letters
    alone tokens join most (`ét`), and reading them cost European text a fifth of its time.
    Else 0."""
    if not _NOT_WORD.search(chars):
        return 0
    joined = b" ".join(other)
    runs, inside, absorbed = glued_parts(joined, vocab.glued)
    inner, more = "".join(inside), []
    for singles, costs, joins in zip(vocab.floor_singles, vocab.floor_costs, absorbed, strict=True):
        residue = singles.sub("", inner)  # its characters no token holds alone cost more
        more.append((costs.cost(residue) - len(residue) if residue else 0) - joins)
    # runs cut off from what is before them cost their spelling (`cut_spelling`), if more
    letters = price(runs, vocab)
    spelled = cut_spelling(joined, runs, vocab.glued, vocab.segments)
    return len(inside) + max(max(letters, s) + m for s, m in zip(spelled, more, strict=True))


def pair_cuts(
    other: list[bytes],
    vocab: Vocabulary,
    price: Price,
    data: bytes = b"",
    *,
    bytewise: bool = False,
    least: int = 0,
) -> int:
    """What the unknown non-ASCII words `other` cost at least by the pairs of adjacent
    characters in them that no token holds (`Glued.held`), the most of the encodings covered
    (`vocab.glued`): between those one token ends and the next begins (`†††` is 3 tokens of
    cl100k, `шьD` 3, `•a` 2), and so between a letter and a character where no token holds
    the pair with the characters around it (`Glued.joins`). Only pairs of single-token
    characters (`Vocabulary.floor_singles`) are read (the byte-level pieces of one no token
    holds alone may join the bytes beside them); each other character costs what its block
    costs (`Vocabulary.floor_costs`); their runs of ASCII letters cost what `price` gives
    them (or their spelling, `cut_spelling`) beyond a token each. A token less per non-ASCII
    character beside an ASCII symbol in the UTF-8 text `data` they are from, if given
    (`_SIDES`), which may join it; read only where the count is more than `least` (what the
    caller has already), which it never goes under then. `bytewise`: a pair with a character
    no token holds alone is a cut where no token holds its bytes (`Vocabulary.byte_pairs`)."""
    joined = b" ".join(other)
    text = joined.decode("utf-8", "surrogatepass")
    runs = joined.translate(_WIDE_TO_SPACE).split()
    held = vocab.glued
    best = 0
    pairs = vocab.byte_pairs if len(vocab.byte_pairs) == len(vocab.glued) else (b"",) * len(held)
    # runs of letters cost what `price` gives them, or their spelling where cut off from what
    # is before them (`cut_spelling`), beyond a token each
    letters = price(runs, vocab) if runs else 0
    spelled = cut_spelling(joined, runs, held, vocab.segments) if runs else [0] * len(held)
    for glued, single, cost, bits, spelling in zip(
        held, vocab.floor_singles, vocab.floor_costs, pairs, spelled, strict=True
    ):
        if not glued.held:
            continue
        alone = _not_single(single.pattern)
        residue = "".join(alone.findall(text))
        marked = alone.sub("\x00", text)  # no pair with one of these is read as a cut
        cut = cuts([w.encode("utf-8", "surrogatepass") for w in marked.split()], glued.held)
        if residue and bytewise and bits:  # a cut where no token holds its bytes side by side
            found = [m.start() for m in _BESIDE_OTHER.finditer(marked)]
            cut -= _held_bytes(text, found, bits)
        elif residue:
            cut -= len(_BESIDE_OTHER.findall(marked))
        cut += sum(not glued.joins(marked, m.start()) for m in _GLUED_PAIR.finditer(marked))
        words = max(letters, spelling) - len(runs)
        best = max(best, len(other) + cut + (cost.cost(residue) if residue else 0) + words)
    # a word's first or last character may join an ASCII symbol beside it in `data` (`”,`,
    # `(“`), which the floor counts apart: a token less each
    if data and best > least:  # read only where it could count more than `least`
        sides = data.translate(_SIDES)
        best = max(least, best - sides.count(b"cs") - sides.count(b"sl"))
    return best


def _held_bytes(text: str, found: list[int], bits: bytes) -> int:
    """How many of the pairs of characters of `text` at `found` have their bytes side by side
    (the last of the first character, the first of the second) in some token (`bits`:
    `Vocabulary.byte_pairs`); the others are cuts."""
    held = 0
    for at in found:
        first, second = text[at : at + 2].encode("utf-8", "surrogatepass")[-1:], text[at + 1]
        code = first[0] << 8 | second.encode("utf-8", "surrogatepass")[0]
        held += bits[code >> 3] >> (code & 7) & 1
    return held


@functools.lru_cache(maxsize=8)
def _not_single(singles: str) -> re.Pattern[str]:
    """A non-ASCII character that is no single token, from the pattern of runs of those that
    are (`[...]+`, `Vocabulary.floor_singles`)."""
    if not singles.startswith("[") or not singles.endswith("]+"):
        return re.compile("[^\\x00-\\x7f]")
    return re.compile("[^\\x00-\\x7f" + singles[1:-2] + "]")
