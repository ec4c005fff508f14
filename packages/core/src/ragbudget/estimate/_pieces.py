"""The floor's count of what lies between words: digits, ASCII symbols, control characters,
whitespace and line breaks (`text_tokens`), and its bounds from character-class counts
(`text_bound`, `gap_bound`). See `ragbudget.estimate._floor` for the rules, which this module
applies piece by piece, as the tokenizers' pre-splitting cuts the text. And the Unicode spaces
that the estimate and the floor read as spaces and their own tokens (`plain_spaces`)."""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Iterable
from itertools import compress, repeat
from operator import add, floordiv, ge
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ragbudget.estimate._text import Vocabulary

__all__ = [
    "WORD_AFTER",
    "bare_extra",
    "common_runs",
    "gap_bound",
    "plain_spaces",
    "soup_tokens",
    "space_pieces",
    "text_bound",
    "text_tokens",
]


def common_runs(per_encoding: Iterable[str]) -> frozenset[bytes]:
    """The runs of 2 or more ASCII symbols that every encoding holds whole (space-separated
    lists, one per encoding: `EstimateData.symbol_runs`), and every single ASCII byte (a
    byte-level tokenizer holds each, so a lone symbol is a token): `Vocabulary.symbol_runs`."""
    sets = [set(runs.encode().split(b" ")) - {b""} for runs in per_encoding]
    lone = {bytes((byte,)) for byte in range(0x80)}
    return frozenset(set.intersection(*sets) | lone) if sets else frozenset(lone)


_PER_SYMBOL = 0.66  # tokens per symbol of symbol soup (cl100k: 1.55 symbols per token)
_SYMBOL = rb"[\x00-\x08\x0e-\x1f!-/:-@\[-`{-~\x7f]"
# the control characters among them, and vertical tabs and form feeds: each a token of its own
# (no token of either encoding holds one beside anything else but `\x1b[` and `\x0c\n` in
# cl100k, `\x00\x00` and `\x01E` in o200k)
_CONTROL_BYTES = bytes((*range(0x09), *range(0x0E, 0x20), 0x7F))
_NOT_CONTROLS = bytes(sorted(set(range(256)) - {*_CONTROL_BYTES, 0x0B, 0x0C}))
# a space -> " ", a control character (not whitespace) -> "c", the rest -> "x": no token of
# either encoding holds a space before a control character, so that space is a token alone
_SPACE_CONTROL = bytes(
    ord(" " if b == 0x20 else "c" if b in _CONTROL_BYTES else "x") for b in range(256)
)
# a run of these alone is the structure of JSON, markup or a call (`":{"`, `</`, `\\"`, `('`),
# not soup
_STRUCTURE = b"\"{}[]:,\\<>/()'"
# symbols -> ".", letters (and non-ASCII bytes) -> "a", digits -> "0", line feeds and spaces
# stay, the rest (other whitespace, and the control characters, counted apart) -> "\t"
_SHAPES = bytes(
    ord(
        "."
        if re.fullmatch(_SYMBOL, bytes((b,))) and b not in _CONTROL_BYTES
        else "a"
        if b >= 0x80 or chr(b).isalpha()
        else "0"
        if 0x30 <= b <= 0x39
        else chr(b)
        if b in (0x0A, 0x20)
        else "\t"
    )
    for b in range(256)
)
# ASCII whitespace but line breaks -> " ", line breaks -> "\n", the rest -> "x"
_GAPS = bytes(ord("\n" if b in b"\n\r" else " " if b in b" \t\v\f" else "x") for b in range(256))
_DIGITS = bytes(byte if 0x30 <= byte <= 0x39 else 0x20 for byte in range(256))
# ASCII symbols kept, the rest -> " " (split() then yields the runs of symbols)
_SYMBOLS_KEPT = bytes(byte if _SHAPES[byte] == ord(".") else 0x20 for byte in range(256))
_SOUP = 3  # a run of 3 symbols or more may be symbol soup
# 4 or more of one symbol in a run (`----` in `//===----===//`): long tokens, not soup
_REPEATED = re.compile(rb"(.)\1{3,}", re.S)
_LONGEST_RUN = 256  # repeated symbols held whole are looked for up to this length
# the most spaces a token holding a line break holds (cl100k 48, o200k 44; every run of up to
# 79 spaces is one token): a longer run before a line break is a token more at least
_SPACES_WITH_BREAK = 48
# byte-pair merges make 2 tokens of a run of 29 spaces before a line break (o200k; 33 in
# cl100k), one of any shorter run, with a line break or not
_LONG_SPACES = 29
_SPACES = re.compile(b" {%d,}" % _LONG_SPACES)
_LONG_SPACE_RUN = b" " * _LONG_SPACES
_JOINS = (b"\t", b"\x0b", b"\x0c")  # whitespace the pre-splitting joins to a run of spaces
# a word (as `_WORD_TABLE` reads them: ASCII letters and non-ASCII characters) right after a
# run of a Unicode space: the run's last character begins its piece (`plain_spaces`)
WORD_AFTER = re.compile("[A-Za-z\x80-\U0010ffff]+")


def text_tokens(
    data: bytes,
    whole: frozenset[bytes],
    counts: tuple[int, ...] | None = None,
    spaces: tuple[tuple[int, ...], ...] = (),
    exact: tuple[tuple[int, ...], tuple[int, ...]] = ((), ()),
) -> int:
    """What the digits, ASCII symbols and control characters, gaps and line breaks of the UTF-8
    `data` cost at least; `whole`: the runs of symbols that the encodings hold whole in one
    token (`Vocabulary.symbol_runs`: every lone symbol, and runs of 2 or more that their tokens
    hold); `spaces`: the lengths of the runs of spaces they hold (`Vocabulary.space_runs`);
    `exact`: the token counts of runs of spaces (`Vocabulary.space_counts`).

    Never more than `text_bound` plus `gap_bound` of its class counts. `counts`, if given, are
    the counts of the class n-grams `0`, `00`, `000`, `\\n`, `\\n\\n`, ` 0` and `\\t` (tabs
    and control characters) in `data` (`_CLASSES`), which spare passes where they decide
    alone."""
    total = 0
    if counts is not None and not counts[2]:  # digit runs of 1 or 2 only: a piece each
        total += counts[0] - counts[1]  # L - floor(L / 2) = 1 for each run
    else:  # a piece per 3 digits of each run, rounded up
        numbers = data.translate(_DIGITS).split()
        total += sum(map(floordiv, map(add, map(len, numbers), repeat(2)), repeat(3)))
    shapes = data.translate(_SHAPES)
    # whitespace the pre-splitting keeps apart: a run of 2 or more spaces or tabs before a
    # letter, symbol or digit (all but its last character are a piece: `\s+(?!\S)`), and a
    # space before a digit (digits take no prefix)
    total += data.translate(_GAPS).count(b"  x")
    total += shapes.count(b" 0") if counts is None else counts[5]
    if data.endswith((b" ", b"\t")):  # whitespace at the end: a piece of its own (`\s+`)
        total += 1
    # long runs of spaces (a wide gap, padding): as many tokens as the runs of spaces the
    # encodings hold need to make them (one C-level test where there are none)
    if spaces and _LONG_SPACE_RUN in data:
        total += _space_tokens(data, spaces, exact)
    if counts is None or counts[6]:  # control characters (or tabs): a token each
        total += _control_tokens(data, whole)
    runs = data.translate(_SYMBOLS_KEPT).split()  # the runs of symbols
    if runs:
        # a token each, but for the lone symbols that a letter follows (".a" ends every run a
        # letter follows, "..a" every longer one): the symbol joins the word (`"Apr`), unless a
        # space comes before it (` "` is a piece, then `Apr`); a line break that follows a run
        # joins it (`):\n`): one less per run of line breaks that a symbol ends
        total += len(runs) - shapes.count(b".a") + shapes.count(b"..a") + shapes.count(b" .a")
        total -= shapes.count(b".\n")
        if b".." in shapes:
            # a run of 2 or more is a piece of its own (with a space before it and line breaks
            # after it: ` [<`, `>]\n`), 2 tokens at least where no token holds it whole (a
            # lone symbol is a token: `whole` holds them all); one C-level pass where all are
            if not whole.issuperset(runs):
                total += len(runs) - sum(map(whole.__contains__, runs))
            if b"..." in shapes:
                soups = [
                    run
                    for run in compress(runs, map(ge, map(len, runs), repeat(_SOUP)))
                    if len(set(run)) >= 3 and run.translate(None, _STRUCTURE)
                ]
                if soups:
                    # repeats of one symbol are rare in soup: one C-level test for them all
                    if _repeats_in(b" ".join(soups)):
                        total += sum(soup_tokens(run, whole) for run in soups)
                    else:
                        total += sum(map(math.ceil, map(_PER_SYMBOL.__mul__, map(len, soups))))
                    total -= 2 * len(soups) - sum(map(whole.__contains__, soups))
    # line breaks, a run of them half as many rounded up (the classes count a carriage return
    # as one)
    if counts is None or b"\r" in data:
        # a carriage return alone is a line break too (`\r\r` one token in o200k)
        lone = data.count(b"\r") - data.count(b"\r\n") - data.count(b"\r\r")
        return total + data.count(b"\n") - data.count(b"\n\n") + max(lone, 0)
    return total + counts[3] - counts[4]


def _control_tokens(data: bytes, whole: frozenset[bytes]) -> int:
    """What the control characters, vertical tabs and form feeds of `data` cost: a token each
    (the pre-splitting joins them to the next word or to the whitespace or symbols around
    them, but no token holds one with anything else), less what the runs of `whole` holding
    them save (cl100k's `\\x1b[` is one token, o200k's `\\x00\\x00` too; cl100k's `\\x0c\\n`,
    a form feed before a line break, is one token that this counts as 2); and a token per
    space right before a control character: no token holds the two, so the space is a token
    of its own (`x \x01` is `x`, ` `, `\x01`)."""
    total = len(data.translate(None, _NOT_CONTROLS))
    if total:
        for run, saved in _held_controls(whole):
            total -= saved * data.count(run)
        total = max(total, 0) + data.translate(_SPACE_CONTROL).count(b" c")
    return total


@functools.lru_cache(maxsize=8)
def _held_controls(whole: frozenset[bytes]) -> tuple[tuple[bytes, int], ...]:
    """The runs of 2 or more of `whole` holding a control character, each with the tokens it
    saves: all its control characters but one if it holds only those, else all of them (its
    symbols are counted as a run of symbols)."""
    out = []
    for run in whole:
        controls = len(run.translate(None, _NOT_CONTROLS))
        if controls and len(run) > 1:
            out.append((run, controls - (controls == len(run))))
    return tuple(sorted(out))


def _space_tokens(
    data: bytes,
    spaces: tuple[tuple[int, ...], ...],
    exact: tuple[tuple[int, ...], tuple[int, ...]] = ((), ()),
) -> int:
    """What the runs of `_LONG_SPACES` spaces or more in `data` cost beyond what `text_tokens`
    counts without them. The pre-splitting makes one piece of such a run: of all of it at the
    end of the text (one token counted), of all but its last space before a word, digit or
    symbol (a gap, one token counted), and of it with a line break after it (`\\s*[\\r\\n]+`,
    whose token the line breaks count). Byte-pair merges cut such a piece the same way
    wherever it is: it costs its count in `exact` (`Vocabulary.space_counts`: runs alone, runs
    before a line break), where it holds nothing else (no tab before it, nor whitespace before
    a line break, nor another line break after it). Else, or past the counts, as many tokens
    as the runs of spaces the encodings hold need to make it (`space_pieces`; `spaces`,
    lengths held per encoding), before a line break of all but the spaces (up to
    `_SPACES_WITH_BREAK`) that a token holding the line break holds too. A tab or form feed
    after it: not counted."""
    alone, broken = exact
    total = 0
    for found in _SPACES.finditer(data):
        start, end = found.span()
        size = end - start
        after = data[end : end + 1]
        joined = start > 0 and data[start - 1 : start] in _JOINS
        if not after:
            exact_count = alone[size] if size < len(alone) and not joined else 0
            total += (exact_count or space_pieces(spaces, size)) - 1
        elif after in b"\r\n":
            lone = start == 0 or not data[start - 1 : start].isspace()
            then = data[end + 1 : end + 2]  # no other line break in the piece
            if lone and size < len(broken) and after == b"\n" and not (then and then in b"\r\n"):
                total += broken[size] - 1
            else:
                rest = range(size - _SPACES_WITH_BREAK, size + 1)
                total += min(space_pieces(spaces, n) for n in rest)
        elif after not in b"\t\x0b\x0c":
            exact_count = alone[size - 1] if size <= len(alone) and not joined else 0
            total += (exact_count or space_pieces(spaces, size - 1)) - 1
    return total


@functools.cache
def _space_table(lengths: tuple[int, ...]) -> tuple[int, ...]:
    """The fewest runs of `lengths` spaces (ascending, 1 among them) that make n spaces, for
    n up to 3 times the longest."""
    best = [0]
    for size in range(1, 3 * lengths[-1] + 1):
        best.append(1 + min(best[size - n] for n in lengths if n <= size))
    return tuple(best)


def space_pieces(spaces: tuple[tuple[int, ...], ...], size: int) -> int:
    """The fewest tokens a run of `size` spaces makes in any of the encodings `spaces` (per
    encoding, the lengths of the runs of spaces its tokens hold, ascending): the most, over
    the encodings, of the fewest runs they hold that make it. Never more than the
    tokenizer's count (its tokens are such runs). Past twice the longest, one longest run
    more per longest run of spaces more (`_space_table`)."""
    out = 0
    for lengths in spaces:
        longest = lengths[-1]
        skip = max(0, (size - 2 * longest) // longest)
        out = max(out, skip + _space_table(lengths)[size - skip * longest])
    return out


@functools.lru_cache(maxsize=8)
def _repeats(whole: frozenset[bytes]) -> dict[int, tuple[int, ...]]:
    """Per ASCII symbol, the lengths of its repeats that `whole` holds (longest first, 1
    last): `-` is held 112 long, `]` only 2."""
    out = {}
    for byte in range(0x80):
        one = bytes((byte,))
        held = (n for n in range(_LONGEST_RUN, 1, -1) if one * n in whole)
        out[byte] = (*held, 1)
    return out


def _repeats_in(data: bytes) -> bool:
    """Whether `data` holds 4 or more of one byte in a row: the XOR of its bytes with their
    successors, as two big integers, has 3 zero bytes in a row (C-level passes only)."""
    if len(data) < 4:
        return False
    pairs = int.from_bytes(data[:-1], "big") ^ int.from_bytes(data[1:], "big")
    return b"\0\0\0" in pairs.to_bytes(len(data) - 1, "big")


def soup_tokens(run: bytes, whole: frozenset[bytes]) -> int:
    """What a run of symbols that is symbol soup costs: 0.66 tokens per symbol, but a repeat
    of 4 or more of one symbol (a rule line's `----`) costs the pieces the longest repeats
    that `whole` holds make of it, taken greedily, as a tokenizer merges them."""
    short = len(run)
    pieces = 0
    repeats = _repeats(whole)
    for found in _REPEATED.finditer(run):
        size = found.end() - found.start()
        short -= size
        for held in repeats[run[found.start()]]:
            pieces += size // held
            size %= held
    return math.ceil(short * _PER_SYMBOL) + pieces


def text_bound(digits: int, pairs: int, triples: int, *symbols_and_breaks: int) -> int:
    """With `gap_bound`, an upper bound of `text_tokens` from counts of the character classes
    (`_CLASSES`): digits, non-overlapping digit pairs and triples, then symbols (classes `.`,
    `-`, `_` and controls) and line breaks. A run of L digits makes ceil(L / 3) <= floor(L / 3)
    + L - floor(L / 2) pieces; a run of symbols at most one token per symbol (0.66 in soup); a
    line break at most one."""
    return digits - pairs + triples + sum(symbols_and_breaks)


def gap_bound(double_spaces: int, spaced_digits: int, controls: int) -> int:
    """An upper bound of the whitespace pieces `text_tokens` counts, from class counts: the
    non-overlapping double spaces, the spaces before a digit, the tabs and controls twice (a
    space before a control is a token: `_control_tokens`), and the whitespace at the end of
    the text. A run of 2 or more spaces, tabs, vertical tabs or
    form feeds holds a double space, or one of the others (which the classes count with the
    controls); a run of spaces too long for one token holds a double space per token it
    makes (every run of up to 79 spaces is one token); a carriage return ends a run, and the
    classes count it with the line breaks in `text_bound`."""
    return double_spaces + spaced_digits + 2 * controls + 1


def bare_extra(word: bytes, vocab: Vocabulary) -> int:
    """What `word` costs more with nothing before it in its piece than the floor prices it
    after a space: a known word's `Vocabulary.bare` (where more), an unknown one of ASCII
    letters the fewest tokens that spell it so (`Segments.tokens`' `alone`), less the token
    an unknown word costs at least."""
    if word in vocab.words:
        return max(0, vocab.bare.get(word, 0))
    if not word.isascii() or not vocab.segments:
        return 0
    return max(0, max(s.tokens([word], None, [True]) for s in vocab.segments) - 1)


def plain_spaces(text: str, vocab: Vocabulary) -> tuple[str, int]:
    """`text` with each run of one Unicode space other than the ASCII one (no-break, thin,
    narrow no-break, ideographic...) as one space, and the tokens those runs cost. Read as a
    letter, as every non-ASCII byte is, one joined the words around it into one unknown word
    (web text holds them: French puts one before `:` and `!`, times read `10:30\\u202fAM`,
    Japanese indents with U+3000). The encodings make tokens of a run and of the word after
    it (`10\\u00a0km` is `10`, `\\u00a0`, `km`; cl100k spells a thin space in 2 tokens): a
    run of `n` costs a space and `tokens * (1 + ceil((n - 1) / held))` more, as before a word,
    where the pre-splitting makes a piece of all of it but its last character; the most of
    the encodings covered (`Vocabulary.wide_costs`). At a line's end, where a run is one
    piece, that is a token or so over. A known word right after a run has no space before it
    in its piece: it costs what it costs without one, where that is more (`bare_extra`:
    `\u2009possibilities` is `\u2009` and `poss`, `ibilities` in cl100k, ` possibilities` one
    token)."""
    if text.isascii() or not vocab.wide_runs.search(text):
        return text, 0
    costs = vocab.wide_costs
    extra = 0

    def one(match: re.Match[str]) -> str:
        nonlocal extra
        size = len(match.group())
        extra += max(tokens * (1 - (1 - size) // held) for tokens, held in costs[match.group(1)])
        if word := WORD_AFTER.match(text, match.end()):
            extra += bare_extra(word.group().encode("utf-8", "surrogatepass"), vocab)
        return " "

    return vocab.wide_runs.sub(one, text), extra
