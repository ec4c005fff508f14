"""The least the token estimate returns: what pre-splitting forces, and unrecognised text.

The linear model of `ragbudget.estimate._model` learned natural text. On text it never saw it can
sink far below the truth: random letters, DNA or protein sequences, base64, API keys, symbol
soup and rare scripts cost a byte-pair tokenizer 1.3 to 4 times more tokens per character than
words do. `floor_tokens` counts such text the way the tokenizers do, piece by piece, and the
estimate never returns less:

- a known word costs its token count after a space (from the vocabulary), or without one
  where the pre-splitting starts a piece at its first letter: at the text's start or after a
  line break (`previously` is 1 token after a space, 2 alone; a word of the
  vocabulary in 4 costs more alone in cl100k, one in 3 in o200k, one in 20 less);
- an unknown ASCII word costs 1, plus 1 per rare letter pair in it (pairs outside those that
  make up 99% of the corpus's letter pairs: `ab` is common, `qz` is rare) and per case
  change: a lowercase letter followed by a capital, or 2 capitals or more followed by a
  lowercase letter (`camelCase`, `HTTPServer`; a case change splits a word in o200k and
  mostly in cl100k: 1 plus the changes exceed the count of fewer than 0.5% of the unknown
  words of the standard library's modules, in either encoding); unknown words in random case
  (`rEsOurCe`: a lowercase letter alone between capitals often, and many capitals) cost what
  random letters cost, as they do in both encodings;
- an unknown word of 12 letters or more that does not look like a word (a rare pair in one
  position of five, fewer than 30% vowels, or 3 times as many letters as distinct ones, as in
  `ACGTTGCA`) costs 1 plus 0.55 tokens per letter after the first, what random letters cost
  (0.6 for capitals but in a sequence of few letters: random capitals cost 0.6-0.67 tokens a
  letter in cl100k, DNA 0.54); so do the shorter unknown words of a text when, taken together,
  they do not look like words (the same rare pair share, or fewer than 25% vowels with a rare
  pair in one position of 10: random letters hold 19% vowels and 39% rare pairs, code's
  abbreviations such as `tfunc` and `hdlr` bring real words to 25-30% vowels, tool names such
  as `jcmd` lower still but with few rare pairs), words in capitals left out: an abbreviation
  or a macro (`METH`, `DIGESTSIZE`) has few vowels but makes whole tokens, and costs 1 plus
  its rare pairs, unless the words in capitals, taken together, hold a rare pair in one
  position of five (random capitals: base32), which cost 0.6 tokens a letter after the first
  of each word;
- where the unknown ASCII words are half of the words or more, those the rules above price
  as words (not as random letters) cost at least the fewest tokens of the encoding that
  spell them, if that is more than all unknown words cost by those rules (`spelling_tokens`,
  read from the runs of ASCII letters its tokens hold: `ragbudget.estimate._segments`; for
  the default target the more of both encodings): a lower bound of what the encoding makes
  of them, where the rules above read source code reversed (`rorrEemitnuR`), one word in
  capitals repeated (`THURSDAY`, 4 tokens of o200k) or words in random case as words; so do
  sequences whose first 4 letters recur once in 16 letters or more, a unit repeated
  (`JFIFJFIF`: 0.75 tokens a letter in cl100k), not a random sequence (DNA);
- digits cost a token per group of up to 3 in each run (how numbers are split), and a space
  or tab before them one more (digits take no prefix: ` 12` is ` ` and `12`);
- a run of 2 or more spaces or tabs before a letter, symbol or digit costs a token (the
  pre-splitting makes a piece of all but its last character: indentation), and whitespace at
  the end of the text a token; a run of 29 spaces or more costs what the encodings make of
  it, alone or with the line break after it (byte-pair merges cut such a piece the same way
  wherever it is: 171 spaces before a line break are 128, 43 and the break, though a token
  holds 48 spaces and a break), up to 256 spaces; a longer one, or one with other whitespace
  in its piece, the fewest runs of spaces the encodings hold that make it (read from their
  vocabularies: every run up to 79 is a token, then 83, 87, 91, 95 and 128), before a line
  break all but the 48 spaces a token holding a line break holds at most;
- a control character, vertical tab or form feed costs a token (no token holds one beside
  anything else, but cl100k's `\\x1b[` and `\\x0c\\n` and o200k's `\\x00\\x00` and `\\x01E`),
  and so does a space right before a control character, which no token holds with it; a
  carriage return alone is a line break;
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
  cost per character in the corpus's European languages (`FOREIGN_COSTS`, their 75th
  percentile: 0.474 tokens per character for cl100k, 0.379 for o200k), or, for the characters
  of the script of the first non-ASCII one where its unknown words cost more in the fitted
  chunks, that script's median (`Vocabulary.scripts`: Gurmukhi 0.73 in o200k, 2.0 in
  cl100k), when that is more than the rules above give them; not where the unknown ASCII
  words hold more than one case change per 4 words (`camelCase`): code's identifiers are
  English pieces, cheaper per character;
- a line break costs a token (a run of them half as many, rounded up), but none right after a
  symbol, which it joins (`):\n`, `",\n`);
- a non-ASCII character no token holds alone, in words the vocabulary lacks, costs what its
  block costs in the encoding (3 for Cherokee, 4 for Shavian), at least 1; for the default
  target the larger of both encodings' sums; so does a character of a script the encoding
  spells a character at a time (holding its letters but next to none of its words: Odia in
  o200k); each such word a token more, and each Latin-1, Latin Extended, IPA or combining
  character in it a token more; or, if more, each such word a token and a token per ASCII
  letter in it beside a byte that no token of the encoding holds beside a letter (read from
  its tokens: no token of cl100k holds a letter right before the first byte of a Cyrillic
  letter, a curly apostrophe or a zero-width space), where one token ends and the next
  begins (`don’t` is `don` and `’t`);
- where it counts more than the rest, a token per run of the characters that no merge of an
  encoding joins to ASCII (`Isolated`, read from its merges: a variation selector, U+FE0F)
  with ASCII or an end on both sides, and a token per stretch of text between such runs: no
  token spans them there (text hiding a variation selector between its letters);
- and in any case a token per 8 letters, digits or non-ASCII characters (whitespace and
  punctuation left out, as rule lines and indentation make long tokens), and at least 1.

On held-out natural text this count exceeds the linear model's on up to a fifth of the
chunks of an ASCII family (code 12%, JSON 22%, prose 10%) and on 28% of those of other
scripts, and lowers the 99th-percentile under-count where it does (code: 8.9% to 3.9% against
cl100k); measured by `tools/estimator/stages.py --floor` (docs/estimator.md). The digits,
symbols, control characters, whitespace and line breaks are counted in
`ragbudget.estimate._pieces`.
"""

from __future__ import annotations

import functools
import math
import re
import string
from collections.abc import Sequence
from itertools import filterfalse, repeat

from ragbudget.estimate._glued import glued_tokens, letter_cut_count, mixed_cuts, pair_cuts
from ragbudget.estimate._pieces import plain_spaces, text_tokens
from ragbudget.estimate._segments import fewest, spelled, spelling_tokens
from ragbudget.estimate._text import (
    _CLASSES,
    _CONTINUATION,
    _WORD_TABLE,
    Vocabulary,
    one_break,
)

__all__ = [
    "case_changes",
    "clear_caches",
    "floor_parts",
    "floor_tokens",
    "forced_tokens",
    "foreign_tokens",
    "isolated_tokens",
    "line_starts",
    "other_tokens",
    "script_key",
    "solid_floor",
    "spelled_starts",
    "unknown_tokens",
    "word_tokens",
]

_CHARS_PER_TOKEN_FLOOR = 8
# Latin-1's punctuation and signs, general punctuation (dashes, quotes, daggers, zero-width
# and format characters), arrows and other symbols to U+2BFF, the byte order mark
_MARK = re.compile("[\u00a1-\u00bf\u00d7\u00f7\u2000-\u206f\u2190-\u2bff\ufeff]")
_MARKS = 4  # ... one in 4 of the non-ASCII characters of the unknown words or more
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
# ... spelled (`spelling_tokens`) where its first 4 letters recur once in 16 letters or more: a
# unit repeated (`JFIFJFIF`: 0.75 tokens a letter in cl100k), not a random sequence (DNA: 0.54)
_UNIT = 4
_PERIOD = 16
# a lowercase letter alone between capitals in one letter of 16 or more: words in random case
# (`rEsOurCe`: 0.54 tokens a letter in cl100k, as random letters; one in 8 letters there), not
# camelCase, whose humps hold 2 lowercase letters or more (`getIncrementalEncoder`)
_CASE_SHARE = 16
# ... and capitals 30% of the letters or more (random case: half; camelCase: one letter in 5
# or 6, but for a few short names: `MyApp MyCompany` holds 29%)
_CAPITALS = 0.3
_UPPER = string.ascii_uppercase.encode()
_PER_LETTER = 0.55  # tokens per letter of random letters (cl100k: 1.85 letters per token)
# ... of random capitals: 0.60-0.67 in cl100k, 0.58-0.65 in o200k (words of 2-30 of them)
_PER_CAPITAL = 0.6
# lowercase -> "a", capitals -> "A", the rest -> " ": `case_changes` counts on it
_CASES = bytes(
    ord("a") if 0x61 <= b <= 0x7A else ord("A") if 0x41 <= b <= 0x5A else 0x20 for b in range(256)
)
_CACHED_WORDS = 1 << 16  # long unknown words whose prices the cache keeps
_LATIN = (b"l", b"L", b"S", b"m")  # classes of Latin-1, Latin Extended, symbols, IPA and marks
_FOREIGN_SHARE = 2  # unknown words 1 in 2 of the words or more: see foreign_tokens
# the UTF-8 prefix that names a character's script (`script_key`)
_SCRIPT = re.compile(rb"[\xc0-\xdf]|[\xe0-\xff][\x80-\xbf]")
_CAMEL_SHARE = 4  # ... unless case changes are more than 1 per 4 unknown ASCII words
# words (as `_WORD_TABLE` cuts them) at the text's start and after a line break (a line feed
# found by a fast literal search; a carriage return alone is rare)
_FIRST_WORD = re.compile(rb"[A-Za-z\x80-\xff]+")
_AFTER_FEED = re.compile(rb"\n([A-Za-z\x80-\xff]+)")
_AFTER_BREAK = re.compile(rb"[\n\r]([A-Za-z\x80-\xff]+)")


def case_changes(words: bytes, *, random: bool = False) -> int:
    """The case changes in the ASCII `words` where the tokenizers cut a word: a lowercase
    letter followed by a capital (`camelCase`) and a run of 2 capitals or more followed by a
    lowercase letter (`HTTPServer`, `rEsOurCe`). Matches of `aA` cannot overlap, nor can
    those of `AAa`: each ends in a letter of the other case than it starts with.

    `random`: for letters priced as random letters (`_PER_LETTER` a letter, which already
    holds most of what a change costs there), only the first kind, as that price was set."""
    return _changes(words.translate(_CASES), random=random)


def _changes(cases: bytes, *, random: bool = False) -> int:
    """`case_changes` of ASCII words already mapped by `_CASES`."""
    camel = cases.count(b"aA")
    return camel if random else camel + cases.count(b"AAa")


def _changes_or_random(words: bytes, letters: int) -> int | None:
    """The case changes of the ASCII `words` (`letters` letters) that look like words
    (`case_changes`), or None where they are in random case: a lowercase letter alone between
    capitals twice or more, in one letter of `_CASE_SHARE` or more, and capitals a share
    `_CAPITALS` of the letters or more."""
    cases = words.translate(_CASES)
    alone = cases.count(b"AaA")
    if (
        alone >= 2
        and alone * _CASE_SHARE >= letters
        and letters - len(words.translate(None, _UPPER)) >= _CAPITALS * letters
    ):
        return None
    return _changes(cases)


def solid_floor(classes: bytes) -> int:
    """1, or a token per 8 characters outside whitespace and punctuation (see `floor_tokens`)."""
    return max(1, -(-len(classes.translate(None, _SPACING)) // _CHARS_PER_TOKEN_FLOOR))


@functools.lru_cache(maxsize=_CACHED_WORDS)
def _word_price(word: bytes, pairs: re.Pattern[bytes]) -> tuple[int, bool]:
    """What one unknown ASCII word of _LONG letters or more costs (see the module docstring),
    and whether that is the price of random letters (a sequence or not a word; words in
    random case are words), which `spelling_tokens` leaves alone.

    Cached: a document's identifiers and names recur from chunk to chunk."""
    size = len(word)
    lower = word.lower()
    rare = len(pairs.findall(lower))
    if len(set(lower)) * _FEW_LETTERS <= size:  # a sequence (`ACGTTGCA`)
        price = 1 + math.ceil((size - 1) * _PER_LETTER) + case_changes(word, random=True) // 2
        return price, lower.count(lower[:_UNIT]) * _PERIOD < size
    if (
        rare * _RARE_SHARE >= size - 1
        or size - len(word.translate(None, _VOWELS)) < _VOWEL_SHARE * size
    ):
        if word.isupper():  # random capitals cost more than random lowercase letters
            return 1 + math.ceil((size - 1) * _PER_CAPITAL), True
        return 1 + math.ceil((size - 1) * _PER_LETTER) + case_changes(word, random=True) // 2, True
    changes = _changes_or_random(word, size)
    if changes is None:  # in random case
        return 1 + math.ceil((size - 1) * _PER_LETTER), False
    return 1 + rare + changes, False


def other_tokens(other: list[bytes], vocab: Vocabulary, data: bytes = b"") -> int:
    """What the unknown non-ASCII words `other` cost at least: a token each, plus their
    characters no token holds alone at their block's cost (the most of any encoding `vocab`
    covers), plus a token per Latin-1, Latin Extended, IPA or combining character (a word of
    English letters holds one or two; a run of them makes a token per character or so); or,
    if more, a token each plus one per ASCII letter beside a byte that no token of an encoding
    holds beside a letter (the most of the encodings): no token spans that cut. Or, if more,
    where they hold ASCII letters, by their runs (`glued_tokens`): each run of ASCII letters an
    unknown ASCII word (`word_tokens`), each other run a token, and its characters no token
    holds alone at their block's cost, less a token per run that a token of the encoding may
    cover whole from before it (`Vocabulary.glued`, `Glued.absorbs`): `a¿a¿` is 4 tokens."""
    if not other:
        return 0
    whole = b"".join(other)
    wide = whole.translate(None, _ASCII_BYTES)
    latin = wide.translate(_CLASSES, _CONTINUATION)
    chars = wide.decode("utf-8", "surrogatepass")
    # characters of the scripts spelled a character at a time, only if their classes occur
    spells = any(map(latin.__contains__, vocab.spelled_classes))
    best = 0
    for singles, costs, letterwise in zip(
        vocab.floor_singles, vocab.floor_costs, vocab.floor_spelled, strict=True
    ):
        cost = len(letterwise.findall(chars)) if spells else 0
        residue = singles.sub("", chars)
        if residue:
            cost += costs.cost(residue)
        best = max(best, cost)
    best += sum(map(latin.count, _LATIN))
    # an ASCII letter beside a byte no token holds beside one (`Vocabulary.letter_cuts`): a
    # token more each, at least, where the prices above are less (`don’t`, `pаssword` with a
    # Cyrillic `а`, letters between zero-width spaces); 2 at most per ASCII letter of the words
    letters = len(whole) - len(wide)
    if vocab.letter_cuts and 2 * letters > best:
        joined = b" ".join(other)
        best = max(best, *(letter_cut_count(joined.translate(t)) for t in vocab.letter_cuts))
    # Latin letters and Cyrillic or Greek ones in one word (look-alikes: `pаypаl`): every pair
    # of bytes no token holds side by side is a cut (`Vocabulary.byte_pairs`); there and where
    # punctuation, symbols or format characters are one in 4 of the non-ASCII characters or
    # more (`_MARK`), so is every pair of characters no token holds
    # (`pair_cuts`: `†††`, `шьD`, `•a`)
    mixed = bool(letters) and (b"c" in latin or b"g" in latin)
    if mixed and vocab.byte_pairs:
        best = max(best, mixed_cuts(other, vocab.byte_pairs))
    if vocab.glued and (mixed or _MARKS * len(_MARK.findall(chars)) >= len(chars)):
        least = len(other) + best
        cut = pair_cuts(other, vocab, word_tokens, data, bytewise=mixed, least=least)
        best = max(best, cut - len(other))
    if letters and vocab.glued:  # or by their runs (`glued_tokens`), if more
        return max(len(other) + best, glued_tokens(other, chars, vocab, word_tokens))
    return len(other) + best


def word_tokens(
    unknown: Sequence[bytes], vocab: Vocabulary, words: list[bytes] | None = None
) -> int:
    """What the unknown ASCII words `unknown` cost at least (see the module docstring).
    `words`, if given, gets those of them priced as words, not as random letters (the ones
    `spelling_tokens` spells)."""
    total = 0
    short = [w for w in unknown if len(w) < _LONG]
    caps = list(filter(bytes.isupper, short))
    if caps:  # abbreviations and macros (`METH`, `DIGESTSIZE`): few vowels, yet whole tokens
        short = list(filterfalse(bytes.isupper, short))
        joined = b" ".join(caps)
        rare = len(vocab.rare_pairs.findall(joined.lower()))
        pairs = len(joined) + 1 - 2 * len(caps)
        if rare * _RARE_SHARE >= pairs and pairs:  # random capitals (base32), not words
            rare = math.ceil(pairs * _PER_CAPITAL)
        elif words is not None:
            words.extend(caps)
        total += len(caps) + rare
    if short:
        joined = b" ".join(short)
        pairs = len(joined) + 1 - 2 * len(short)  # letter pairs within the words
        letters = pairs + len(short)
        rare = len(vocab.rare_pairs.findall(joined.lower()))
        vowels = letters + len(short) - 1 - len(joined.translate(None, _VOWELS))
        few_vowels = vowels < _GROUP_VOWEL_SHARE * letters and rare * _SOME_RARE >= pairs
        if rare * _RARE_SHARE >= pairs or few_vowels:  # not words
            rare = math.ceil(pairs * _PER_LETTER)
            changes = case_changes(joined, random=True)
        else:
            if (found := _changes_or_random(joined, letters)) is None:  # random case
                rare, changes = math.ceil(pairs * _PER_LETTER), 0
            else:
                changes = found
            if words is not None:
                words.extend(short)
        total += len(short) + rare + changes
    if len(short) + len(caps) < len(unknown):
        for word in (w for w in unknown if len(w) >= _LONG):
            price, random = _word_price(word, vocab.rare_pairs)
            total += price
            if words is not None and not random:
                words.append(word)
    return total


def foreign_tokens(
    unknown: Sequence[bytes], other: Sequence[bytes], words: int, vocab: Vocabulary
) -> int:
    """What the unknown ASCII words `unknown` and non-ASCII words `other` cost at least, by
    their characters, when they are half of the text's `words` or more and the ASCII ones hold
    at most one case change per 4 words (else 0): see the module docstring. The characters of
    the script of the first non-ASCII one (text is most often in one script; its block of 128
    code points: 2 keys of `Vocabulary.scripts`) at that script's rate where it is more."""
    count = len(unknown) + len(other)
    if not count or count * _FOREIGN_SHARE < words:
        return 0
    if b" ".join(unknown).translate(_CASES).count(b"aA") * _CAMEL_SHARE > len(unknown):
        return 0  # code's identifiers
    chars = sum(map(len, unknown))
    extra = 0.0
    if other:
        joined = b"".join(other)
        chars += len(joined.decode("utf-8", "surrogatepass"))
        if vocab.scripts and (key := script_key(joined)):
            even = key[:-1] + bytes((key[-1] & 0xFE,))
            for half in (even, key[:-1] + bytes((key[-1] | 1,))):
                if more := vocab.scripts.get(half):
                    extra += more * joined.count(half)
    return math.ceil(vocab.foreign * chars + extra)


def script_key(data: bytes) -> bytes:
    """The UTF-8 prefix that names the script of the first non-ASCII character of `data`
    (`Vocabulary.scripts`): its lead byte if it is 2 bytes long, else its lead and second bytes
    (a block of 64 characters); empty for ASCII."""
    found = _SCRIPT.search(data)
    return found.group() if found else b""


def bare_tokens(data: bytes, vocab: Vocabulary) -> int:
    """What the known words of the UTF-8 `data` at a piece's start (`line_starts`; a word
    after a digit is one too, `2nd`, left out: finding them costs 4 times as much) cost more
    than after a space, or less (`Vocabulary.bare`): `previously` is 1 token, 2 alone."""
    bare = vocab.bare
    if not bare:
        return 0
    return sum(map(bare.get, line_starts(data), repeat(0)))


def line_starts(data: bytes) -> list[bytes]:
    """The words of the UTF-8 `data` at its start and after a line break: first in their piece."""
    first = _FIRST_WORD.match(data)
    starts = (_AFTER_BREAK if b"\r" in data else _AFTER_FEED).findall(data)
    return [first.group(), *starts] if first else starts


def spelled_starts(data: bytes, words: Sequence[bytes]) -> list[bytes]:
    """Each time one of `words` stands at a line's start in the UTF-8 `data`: that word."""
    spelled = set(words)
    return [word for word in line_starts(data) if word in spelled]


def unknown_tokens(
    unknown: Sequence[bytes],
    other: list[bytes],
    words: int,
    vocab: Vocabulary,
    data: bytes = b"",
) -> int:
    """What the unknown ASCII words `unknown` and non-ASCII words `other` of a text of `words`
    words (its UTF-8 `data`) cost at least: `word_tokens` (or, where `spelled`, the same with
    those it prices as words at their `spelling_tokens`, if more) and `other_tokens`, or
    `foreign_tokens` if more."""
    as_words: list[bytes] = []
    priced = word_tokens(unknown, vocab, as_words)
    if spelled(len(unknown), words) and as_words:
        starts = spelled_starts(data, as_words)
        priced = max(priced, spelling_tokens(as_words, vocab, starts=starts))
    priced += other_tokens(other, vocab, data)
    return max(priced, foreign_tokens(unknown, other, words, vocab))


def isolated_tokens(text: str, vocab: Vocabulary) -> int:
    """The least `text` costs by the characters that are a token of their own beside ASCII
    (`Isolated`), the most of any encoding `vocab` covers (0 without them)."""
    return max(isolated.tokens(text) for isolated in vocab.floor_isolated)


def clear_caches() -> None:
    """Forget the prices of long unknown words and the spellings of unknown words (for
    benchmarks measuring a cold start)."""
    _word_price.cache_clear()
    fewest.cache_clear()


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
    pieces = text_tokens(data, vocab.symbol_runs, spaces=vocab.space_runs, exact=vocab.space_counts)
    known_tokens += bare_tokens(data, vocab)
    return known_tokens + unknown_tokens(unknown, other, words, vocab, data) + pieces


def floor_parts(
    text: str, vocab: Vocabulary
) -> tuple[bytes, bytes, int, list[bytes], list[bytes], int]:
    """What the floor is counted from: the UTF-8 of `text`, its classes (`_CLASSES`, one per
    character), the token count of its known words, its unknown ASCII words, its unknown
    words with non-ASCII letters and the number of its words (`\\r\\n` read as `\\n`,
    `one_break`)."""
    data = one_break(text).encode("utf-8", "surrogatepass")
    classes = data.translate(_CLASSES, _CONTINUATION)
    words = data.translate(_WORD_TABLE).split()
    table = vocab.words
    known = sum(table.get(w, 0) for w in words)
    unknown = [w for w in words if w not in table and w.isascii()]
    other = [w for w in words if w not in table and not w.isascii()]
    return data, classes, known, unknown, other, len(words)


def floor_tokens(text: str, vocab: Vocabulary) -> int:
    """The least the estimate returns for non-empty `text` (see the module docstring); a run
    of a Unicode space (no-break, thin...) counts as a space and the run's tokens
    (`plain_spaces`)."""
    plain, runs = plain_spaces(text, vocab)
    data, classes, known, unknown, other, words = floor_parts(plain, vocab)
    floor = max(solid_floor(classes), forced_tokens(data, known, unknown, other, vocab, words))
    if other:
        floor = max(floor, isolated_tokens(plain, vocab))
    return min(floor + runs, len(text.encode("utf-8", "surrogatepass"))) if runs else floor
