"""The least the token estimate returns: what pre-splitting forces, and unrecognised text.

The linear model of `ragbudget._estimate` learned natural text. On text it never saw it can
sink far below the truth: random letters, DNA or protein sequences, base64, API keys, symbol
soup and rare scripts cost a byte-pair tokenizer 1.3 to 4 times more tokens per character than
words do. `floor_tokens` counts such text the way the tokenizers do, piece by piece, and the
estimate never returns less:

- a known word costs its token count (from the vocabulary);
- an unknown ASCII word costs 1, plus 1 per rare letter pair in it (pairs outside those that
  make up 99% of the corpus's letter pairs: `ab` is common, `qz` is rare) and per lowercase
  letter followed by a capital (a case change splits a word in o200k and mostly in cl100k);
- an unknown word of 12 letters or more that does not look like a word (a rare pair in one
  position of five, fewer than 30% vowels, or 3 times as many letters as distinct ones, as in
  `ACGTTGCA`) costs 1 plus 0.55 tokens per letter after the first, what random letters cost;
  so do the shorter unknown words of a text when, taken together, they do not look like
  words (the same rare pair share, or fewer than 25% vowels with a rare pair in one position
  of 10: random letters hold 19% vowels and 39% rare pairs, code's abbreviations such as
  `tfunc` and `hdlr` bring real words to 25-30% vowels, tool names such as `jcmd` lower still
  but with few rare pairs), words in capitals left
  out: an abbreviation or a macro (`METH`, `DIGESTSIZE`) has few vowels but makes whole
  tokens, and costs 1 plus its rare pairs;
- digits cost a token per group of up to 3 in each run (how numbers are split), and a space
  or tab before them one more (digits take no prefix: ` 12` is ` ` and `12`);
- a run of 2 or more spaces or tabs before a letter, symbol or digit costs a token (the
  pre-splitting makes a piece of all but its last character: indentation);
- a run of ASCII symbols or control characters costs a token (a lone symbol only when no
  letter follows, or a space comes before it: `, `, `1:2` and ` "Apr` cost one, `.name` and
  `"Apr` none, the symbol joining the word), or 0.66 tokens per symbol when it holds 3
  different ones or more (symbol soup; not a rule line like `-----`, nor a run of JSON's,
  markup's or a call's structure alone: `"},{"`, `</`, `\\"`, `('`), where 4 or more of one
  symbol in it cost the pieces of the longest repeats the encodings hold (LLVM's banner
  `//===---...---===//` holds 70 dashes that both encodings make one token); a run of 2 or more
  that no token of the encoding holds whole (with at most a space before it and line breaks
  after it, as the pre-splitting cuts it) costs 2 at least, read from the encodings'
  vocabularies, not fitted: o200k holds ` [<` in no token, so git's `[<options>]` costs 2
  there, not 1;
- where unknown words are half of a text's words or more (a language the vocabulary lacks,
  whose common words are unknown too: Limburgish, Kabyle), they cost at least what such words
  cost per character in the corpus's European languages (`FOREIGN_COSTS`, their median: 0.439
  tokens per character for cl100k, 0.353 for o200k), when that is more than the rules above
  give them; not where the unknown ASCII words hold more than one case change per 4 words
  (`camelCase`): code's identifiers are English pieces, cheaper per character;
- a line break costs a token (a run of them half as many, rounded up), but none right after a
  symbol, which it joins (`):\n`, `",\n`);
- a non-ASCII character no token holds alone, in words the vocabulary lacks, costs what its
  block costs in the encoding (3 for Cherokee, 4 for Shavian), at least 1; for the default
  target the larger of both encodings' sums; so does a character of a script the encoding
  spells a character at a time (holding its letters but next to none of its words: Odia in
  o200k); each such word a token more, and each Latin-1, Latin Extended, IPA or combining
  character in it a token more;
- and in any case a token per 8 letters, digits or non-ASCII characters (whitespace and
  punctuation left out, as rule lines and indentation make long tokens), and at least 1.

On held-out natural text this count exceeds the linear model's on up to a fifth of the
chunks of an ASCII family (code 10%, JSON 20%, prose 10%) and on 28% of those of other
scripts, and lowers the 99th-percentile under-count where it does (code: 8.9% to 4.3% against
cl100k); measured by `tools/estimator/stages.py --floor` (docs/estimator.md).
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Sequence
from itertools import compress, filterfalse, repeat
from operator import add, floordiv, ge

from ragbudget._estimate_text import _CLASSES, _CONTINUATION, _WORD_TABLE, Vocabulary

__all__ = [
    "clear_caches",
    "floor_parts",
    "floor_tokens",
    "forced_tokens",
    "foreign_tokens",
    "gap_bound",
    "other_tokens",
    "solid_floor",
    "soup_tokens",
    "text_bound",
    "text_tokens",
    "unknown_tokens",
    "word_tokens",
]

_CHARS_PER_TOKEN_FLOOR = 8
_SPACING = b" \n\t-_."  # classes of ASCII whitespace, controls and punctuation
_ASCII_BYTES = bytes(range(0x80))
_VOWELS = b"aeiouAEIOU"
_LONG = 12  # unknown words this long or longer are tested one by one for looking like words
_RARE_SHARE = 5  # a rare pair in one position of 5 or more: not a word
_VOWEL_SHARE = 0.3  # fewer vowels than this share of the letters: not a word
# ... for the short unknown words taken together: random letters hold 19% vowels, code's short
# abbreviations and names (`tfunc`, `hdlr`, `Stacks`) bring real words down to 25-30%
_GROUP_VOWEL_SHARE = 0.25
# ... when a rare pair is in one position of 10 or more too: abbreviations and tool names with
# few vowels (`jcmd`, `hdlr`) hold few rare pairs, random letters 39%
_SOME_RARE = 10
_FEW_LETTERS = 3  # 3 times as many letters as distinct ones: a sequence
_PER_LETTER = 0.55  # tokens per letter of random letters (cl100k: 1.85 letters per token)
_PER_SYMBOL = 0.66  # tokens per symbol of symbol soup (cl100k: 1.55 symbols per token)
# lowercase -> "a", capitals -> "A", the rest -> " ": `count(b"aA")` counts the case changes
# (a lowercase letter followed by a capital; matches of "aA" cannot overlap)
_CASES = bytes(
    ord("a") if 0x61 <= b <= 0x7A else ord("A") if 0x41 <= b <= 0x5A else 0x20 for b in range(256)
)
_SYMBOL = rb"[\x00-\x08\x0e-\x1f!-/:-@\[-`{-~\x7f]"
# a run of these alone is the structure of JSON, markup or a call (`":{"`, `</`, `\\"`, `('`),
# not soup
_STRUCTURE = b"\"{}[]:,\\<>/()'"
# symbols -> ".", letters (and non-ASCII bytes) -> "a", digits -> "0", line feeds and spaces
# stay, the rest (other whitespace) -> "\t"
_SHAPES = bytes(
    ord(
        "."
        if re.fullmatch(_SYMBOL, bytes((b,)))
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
# ASCII whitespace but line feeds -> " ", line feeds stay, the rest -> "x"
_GAPS = bytes(ord("\n" if b == 0x0A else " " if b in b" \t\v\f\r" else "x") for b in range(256))
_DIGITS = bytes(byte if 0x30 <= byte <= 0x39 else 0x20 for byte in range(256))
# ASCII symbols and controls kept, the rest -> " " (split() then yields the runs of symbols)
_SYMBOLS_KEPT = bytes(byte if _SHAPES[byte] == ord(".") else 0x20 for byte in range(256))
_SOUP = 3  # a run of 3 symbols or more may be symbol soup
# 4 or more of one symbol in a run (`----` in `//===----===//`): long tokens, not soup
_REPEATED = re.compile(rb"(.)\1{3,}", re.S)
_LONGEST_RUN = 256  # repeated symbols held whole are looked for up to this length
_CACHED_WORDS = 1 << 16  # long unknown words whose prices the cache keeps
_LATIN = (b"l", b"L", b"S", b"m")  # classes of Latin-1, Latin Extended, symbols, IPA and marks
_FOREIGN_SHARE = 2  # unknown words 1 in 2 of the words or more: see foreign_tokens
_CAMEL_SHARE = 4  # ... unless case changes are more than 1 per 4 unknown ASCII words


def solid_floor(classes: bytes) -> int:
    """1, or a token per 8 characters outside whitespace and punctuation (see `floor_tokens`)."""
    return max(1, -(-len(classes.translate(None, _SPACING)) // _CHARS_PER_TOKEN_FLOOR))


@functools.lru_cache(maxsize=_CACHED_WORDS)
def _word_price(word: bytes, pairs: re.Pattern[bytes]) -> int:
    """What one unknown ASCII word of _LONG letters or more costs (see the module docstring).

    Cached: a document's identifiers and names recur from chunk to chunk."""
    size = len(word)
    lower = word.lower()
    rare = len(pairs.findall(lower))
    changes = word.translate(_CASES).count(b"aA")
    if (
        rare * _RARE_SHARE >= size - 1
        or size - len(word.translate(None, _VOWELS)) < _VOWEL_SHARE * size
        or len(set(lower)) * _FEW_LETTERS <= size
    ):
        return 1 + math.ceil((size - 1) * _PER_LETTER) + changes // 2
    return 1 + rare + changes


def other_tokens(other: list[bytes], vocab: Vocabulary) -> int:
    """What the unknown non-ASCII words `other` cost at least: a token each, plus their
    characters no token holds alone at their block's cost (the most of any encoding `vocab`
    covers), plus a token per Latin-1, Latin Extended, IPA or combining character (a word of
    English letters holds one or two; a run of them makes a token per character or so)."""
    if not other:
        return 0
    wide = b"".join(other).translate(None, _ASCII_BYTES)
    latin = wide.translate(_CLASSES, _CONTINUATION)
    chars = wide.decode("utf-8", "surrogatepass")
    # characters of the scripts spelled a character at a time, only if their classes occur
    spells = any(map(latin.__contains__, vocab.spelled_classes))
    best = 0
    for singles, costs, spelled in zip(
        vocab.floor_singles, vocab.floor_costs, vocab.floor_spelled, strict=True
    ):
        cost = len(spelled.findall(chars)) if spells else 0
        residue = singles.sub("", chars)
        if residue:
            cost += costs.cost(residue)
        best = max(best, cost)
    return len(other) + best + sum(map(latin.count, _LATIN))


def word_tokens(unknown: Sequence[bytes], vocab: Vocabulary) -> int:
    """What the unknown ASCII words `unknown` cost at least (see the module docstring)."""
    total = 0
    short = [w for w in unknown if len(w) < _LONG]
    caps = list(filter(bytes.isupper, short))
    if caps:  # abbreviations and macros (`METH`, `DIGESTSIZE`): few vowels, yet whole tokens
        short = list(filterfalse(bytes.isupper, short))
        total += len(caps) + len(vocab.rare_pairs.findall(b" ".join(caps).lower()))
    if short:
        joined = b" ".join(short)
        pairs = len(joined) + 1 - 2 * len(short)  # letter pairs within the words
        letters = pairs + len(short)
        rare = len(vocab.rare_pairs.findall(joined.lower()))
        vowels = letters + len(short) - 1 - len(joined.translate(None, _VOWELS))
        few_vowels = vowels < _GROUP_VOWEL_SHARE * letters and rare * _SOME_RARE >= pairs
        if rare * _RARE_SHARE >= pairs or few_vowels:  # not words
            rare = math.ceil(pairs * _PER_LETTER)
        total += len(short) + rare + joined.translate(_CASES).count(b"aA")
    if len(short) + len(caps) < len(unknown):
        long = [w for w in unknown if len(w) >= _LONG]
        total += sum(map(_word_price, long, repeat(vocab.rare_pairs)))
    return total


def foreign_tokens(
    unknown: Sequence[bytes], other: Sequence[bytes], words: int, vocab: Vocabulary
) -> int:
    """What the unknown ASCII words `unknown` and non-ASCII words `other` cost at least, by
    their characters, when they are half of the text's `words` or more and the ASCII ones hold
    at most one case change per 4 words (else 0): see the module docstring."""
    count = len(unknown) + len(other)
    if not count or count * _FOREIGN_SHARE < words:
        return 0
    if b" ".join(unknown).translate(_CASES).count(b"aA") * _CAMEL_SHARE > len(unknown):
        return 0  # code's identifiers
    chars = sum(map(len, unknown))
    if other:
        chars += len(b"".join(other).decode("utf-8", "surrogatepass"))
    return math.ceil(vocab.foreign * chars)


def unknown_tokens(
    unknown: Sequence[bytes], other: list[bytes], words: int, vocab: Vocabulary
) -> int:
    """What the unknown ASCII words `unknown` and non-ASCII words `other` of a text of `words`
    words cost at least: `word_tokens` and `other_tokens`, or `foreign_tokens` if more."""
    pieces = word_tokens(unknown, vocab) + other_tokens(other, vocab)
    return max(pieces, foreign_tokens(unknown, other, words, vocab))


def clear_caches() -> None:
    """Forget the prices of long unknown words (for benchmarks measuring a cold start)."""
    _word_price.cache_clear()


def text_tokens(
    data: bytes, whole: frozenset[bytes], counts: tuple[int, int, int, int, int, int] | None = None
) -> int:
    """What the digits, ASCII symbols, gaps and line breaks of the UTF-8 `data` cost at least;
    `whole`: the runs of symbols that the encodings hold whole in one token
    (`Vocabulary.symbol_runs`: every lone symbol, and runs of 2 or more that their tokens hold).

    Never more than `text_bound` plus `gap_bound` of its class counts. `counts`, if given, are
    the counts of the class n-grams `0`, `00`, `000`, `\\n`, `\\n\\n` and ` 0` in `data`
    (`_CLASSES`), which spare passes where they decide alone."""
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
        return total + data.count(b"\n") - data.count(b"\n\n")
    return total + counts[3] - counts[4]


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
    non-overlapping double spaces, the spaces before a digit and the tabs and controls. A run
    of 2 or more whitespace characters holds a double space, or a tab, vertical tab or form
    feed (which the classes count with the controls), or a carriage return (which they count
    with the line breaks in `text_bound`, and `text_tokens` does not count as one)."""
    return double_spaces + spaced_digits + controls


def forced_tokens(
    data: bytes,
    known_tokens: int,
    unknown: Sequence[bytes],
    other: list[bytes],
    vocab: Vocabulary,
    words: int,
) -> int:
    """The piece-by-piece count of `floor_tokens`, from the UTF-8 `data`, the sum of the token
    counts of its known words, its unknown ASCII words, its unknown non-ASCII words and the
    number of its words."""
    pieces = text_tokens(data, vocab.symbol_runs)
    return known_tokens + unknown_tokens(unknown, other, words, vocab) + pieces


def floor_parts(
    text: str, vocab: Vocabulary
) -> tuple[bytes, bytes, int, list[bytes], list[bytes], int]:
    """What the floor is counted from: the UTF-8 of `text`, its classes (`_CLASSES`, one per
    character), the token count of its known words, its unknown ASCII words, its unknown
    words with non-ASCII letters and the number of its words."""
    data = text.encode("utf-8", "surrogatepass")
    classes = data.translate(_CLASSES, _CONTINUATION)
    words = data.translate(_WORD_TABLE).split()
    table = vocab.words
    known = sum(table.get(w, 0) for w in words)
    unknown = [w for w in words if w not in table and w.isascii()]
    other = [w for w in words if w not in table and not w.isascii()]
    return data, classes, known, unknown, other, len(words)


def floor_tokens(text: str, vocab: Vocabulary) -> int:
    """The least the estimate returns for non-empty `text` (see the module docstring)."""
    data, classes, known, unknown, other, words = floor_parts(text, vocab)
    return max(solid_floor(classes), forced_tokens(data, known, unknown, other, vocab, words))
