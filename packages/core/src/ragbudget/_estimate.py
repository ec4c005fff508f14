"""A dependency-free token estimate calibrated against byte-pair tokenizers (tiktoken).

How it works, in C-speed passes (no Python loop per character, word or match):

1. Character classes. The text is UTF-8 encoded and `bytes.translate` maps every character to
   one class byte (lowercase, uppercase, digit, space, newline, underscore, rule punctuation
   like `-=*#~`, other punctuation; for non-ASCII characters, the UTF-8 lead byte tells the
   script: accented Latin, Greek, Cyrillic, Hebrew/Arabic, Indic, CJK punctuation and kana, Han,
   Hangul, fullwidth forms, emoji...). Continuation bytes are deleted, so the class string has
   one byte per character. `bytes.count` of a few class n-grams then measures what a byte-pair
   tokenizer reacts to beyond words: digit groups (`000`), punctuation, whitespace runs and
   indentation, line breaks; the script classes are counted on the non-ASCII classes alone
   (a short string unless the text is mostly non-ASCII).
2. Words. ASCII non-letters become spaces and `bytes.split` yields the words. The vocabulary
   holds the 32,000 most frequent words of the calibration corpus (English, code identifiers,
   and the common words of every language in it) with each word's token count after a space
   in the target encoding. One dict lookup per word gives a known word's token count (0 for
   an unknown word); every unknown word is priced by its length (a weight per length up to
   24 bytes, a per-byte weight, and separate length weights for words with non-ASCII letters).
   The lookup is what tells a Spanish or Russian text (frequent words of one or two tokens)
   from a Finnish or Ukrainian one of the same shape.
3. CJK characters. One regex pass over the non-ASCII characters counts the kana, Han and
   Hangul characters that are not single tokens in the target encoding (rare Han characters
   cost 2-3 tokens).

The count is a linear combination of these features, with weights fitted per target encoding
on a corpus of real text (`benchmarks/estimator/calibrate.py`), scaled so that under-counting
stays rare, rounded up, and clamped to `[ceil(bytes / 8), bytes]` for non-empty text (a
byte-level tokenizer never makes more tokens than bytes).
"""

from __future__ import annotations

import functools
import math
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import compress, filterfalse, repeat
from operator import mul, not_

from ragbudget import _estimate_data as _data

__all__ = ["DEFAULT_TARGET", "TARGETS", "Vocabulary", "estimate_tokens", "features", "vocabulary"]

TARGETS = ("cl100k_base", "o200k_base")
"""Encodings the estimate can be calibrated to, besides the default."""

DEFAULT_TARGET = "max"
"""The default target: the larger of the counts of every encoding in `TARGETS`."""


def _class_table() -> bytes:
    table = bytearray(256)
    for byte in range(256):
        char = chr(byte)
        if byte < 0x80:
            if "a" <= char <= "z":
                cls = "a"
            elif "A" <= char <= "Z":
                cls = "A"
            elif "0" <= char <= "9":
                cls = "0"
            elif char in " \n_":
                cls = char
            elif char == "\r":
                cls = "\n"
            elif char in "-=*#~":
                cls = "-"
            elif char.isprintable():
                cls = "."
            else:
                cls = "\t"
        # UTF-8 lead bytes name the script block of the character they start.
        elif byte < 0xC2:
            cls = "?"  # continuation byte (deleted) or invalid lead
        elif byte == 0xC2:
            cls = "S"  # U+0080-00BF: nbsp, symbols
        elif byte == 0xC3:
            cls = "l"  # Latin-1 letters
        elif byte <= 0xC9:
            cls = "L"  # Latin Extended-A/B
        elif byte <= 0xCD:
            cls = "m"  # IPA, modifiers, combining marks
        elif byte <= 0xCF:
            cls = "g"  # Greek
        elif byte <= 0xD4:
            cls = "c"  # Cyrillic
        elif byte <= 0xDF:
            cls = "r"  # Armenian, Hebrew, Arabic, Syriac...
        elif byte == 0xE0:
            cls = "i"  # Indic, Thai, Lao, Tibetan
        elif byte == 0xE1:
            cls = "x"  # Georgian, Hangul Jamo, Khmer, Vietnamese, Greek Extended...
        elif byte == 0xE2:
            cls = "s"  # general punctuation, symbols, arrows, dingbats
        elif byte == 0xE3:
            cls = "j"  # CJK punctuation, kana
        elif byte <= 0xE9:
            cls = "h"  # Han
        elif byte <= 0xED:
            cls = "k"  # Hangul syllables (and Yi, surrogates)
        elif byte == 0xEE:
            cls = "p"  # private use
        elif byte == 0xEF:
            cls = "f"  # fullwidth forms, variation selectors, CJK compatibility
        else:
            cls = "e"  # outside the BMP: emoji, rare Han, math letters
        table[byte] = ord(cls)
    return bytes(table)


_CLASSES = _class_table()
_CONTINUATION = bytes(range(0x80, 0xC0))
_WORD_TABLE = bytes(byte if byte >= 0x80 or chr(byte).isalpha() else 0x20 for byte in range(256))


def _pattern(spec: str) -> bytes:
    return spec.replace("~s", " ").replace("~n", "\n").replace("~t", "\t").encode()


# Class n-grams (`~s` space, `~n` newline, `~t` tab or control); `~s~s~s~s` counts the sum of
# floor(len / 4) over runs of spaces. Few, because every count is one pass.
ASCII_PATTERNS: tuple[bytes, ...] = tuple(
    map(
        _pattern,
        (
            *("A", "0", "_", "-", ".", "00", "000", "..", "--"),
            *("~s~s~s~s", "~s~s~s~s~s~s~s~s", "~s0", "~s.", "~n", "~n~n", "~n~s", ".~n", "~t"),
        ),
    )
)
"""Class n-grams counted in every text."""

# Grouped by the class they need: a group is counted only when its class occurs at all.
OTHER_GROUPS: tuple[tuple[bytes, tuple[bytes, ...]], ...] = tuple(
    (group[0].encode(), tuple(map(_pattern, group)))
    for group in (("c", "c."), *((cls,) for cls in "glLeSmrixsjhkpf"))
)
"""Class n-grams that only occur in text with non-ASCII characters."""

OTHER_PATTERNS: tuple[bytes, ...] = tuple(p for _, group in OTHER_GROUPS for p in group)

_ZEROS = (0,) * len(OTHER_PATTERNS)
_OTHER_SINGLES = tuple(cls for cls, _ in OTHER_GROUPS)
_ASCII_CLASSES = bytes(set(_CLASSES[:0x80]))
_ASCII_BYTES = bytes(range(0x80))
_CJK_CLASSES = (b"j", b"h", b"k")
LENGTH_BINS = 24
"""Unknown ASCII words are counted by length: 1..LENGTH_BINS, and longer."""
OTHER_LENGTH_BINS = 32
"""Unknown words with non-ASCII letters are counted by UTF-8 length: 1..32, and longer."""
_OTHER_ZEROS = (0,) * (OTHER_LENGTH_BINS + 2)


def _rare_cjk_pattern(single: str) -> re.Pattern[str]:
    """Kana, Han and Hangul characters that are NOT single tokens."""
    cheap = set(single)
    spans: list[str] = []
    for low, high in ((0x3000, 0x9FFF), (0xAC00, 0xD7AF)):
        start = None
        for point in range(low, high + 2):
            if point <= high and chr(point) not in cheap:
                start = point if start is None else start
            elif start is not None:
                spans.append(f"{re.escape(chr(start))}-{re.escape(chr(point - 1))}")
                start = None
    return re.compile(f"[{''.join(spans)}]")


@dataclass(frozen=True)
class Vocabulary:
    """What one target knows: frequent words with their token counts (after a space), and the
    CJK characters that are single tokens."""

    words: dict[bytes, int]
    rare_cjk: re.Pattern[str]

    @classmethod
    def build(cls, words: Iterable[str], tokens: Iterable[int], cjk_chars: str) -> Vocabulary:
        table = {w.encode(): n for w, n in zip(words, tokens, strict=True)}
        return cls(table, _rare_cjk_pattern(cjk_chars))


@functools.cache
def vocabulary(target: str) -> Vocabulary:
    """The shipped vocabulary of `target` (DEFAULT_TARGET or one of TARGETS)."""
    words = _data.WORDS.split(" ")
    if target == DEFAULT_TARGET:
        tokens: Iterable[int] = map(max, *(map(int, _data.TOKENS[t]) for t in TARGETS))
    else:
        tokens = map(int, _data.TOKENS[target])
    return Vocabulary.build(words, tokens, _data.CJK[target])


FEATURE_NAMES: tuple[str, ...] = (
    "bytes",
    "chars",
    *(p.decode() for p in ASCII_PATTERNS),
    *(p.decode() for p in OTHER_PATTERNS),
    "known_words",
    "known_tokens",
    "unknown_bytes",
    "cjk_rare",
    *(f"unknown_len_{n}" for n in range(1, LENGTH_BINS + 1)),
    "unknown_len_more",
    "other_unknown_bytes",
    *(f"other_unknown_len_{n}" for n in range(1, OTHER_LENGTH_BINS + 1)),
    "other_unknown_len_more",
    "constant",
)


def features(text: str, vocab: Vocabulary) -> list[int]:
    """The feature vector of `text` (see the module docstring), aligned with FEATURE_NAMES."""
    data = text.encode("utf-8", "surrogatepass")
    ascii_only = len(data) == len(text)
    classes = data.translate(_CLASSES) if ascii_only else data.translate(_CLASSES, _CONTINUATION)
    row = [len(data), len(text)]
    row += map(classes.count, ASCII_PATTERNS)
    if ascii_only:
        row += _ZEROS
        cjk = 0
    else:
        for cls, group in OTHER_GROUPS:
            row += map(classes.count, group) if cls in classes else (0,) * len(group)
        has_cjk = any(map(classes.__contains__, _CJK_CLASSES))
        cjk = len(vocab.rare_cjk.findall(text)) if has_cjk else 0
    words = data.translate(_WORD_TABLE).split()
    table = vocab.words
    known = list(filter(table.__contains__, words))
    unknown = list(filterfalse(table.__contains__, words))
    other: list[bytes] = []
    if not ascii_only:
        other = list(filterfalse(bytes.isascii, unknown))
        unknown = list(filter(bytes.isascii, unknown))
    lengths = Counter(map(len, unknown))
    row += (len(known), sum(map(table.__getitem__, known)))
    row += (sum(map(len, unknown)), cjk)
    row += [lengths.get(n, 0) for n in range(1, LENGTH_BINS + 1)]
    row.append(len(unknown) - sum(row[-LENGTH_BINS:]))
    if other:
        lengths = Counter(map(len, other))
        row.append(sum(map(len, other)))
        row += [lengths.get(n, 0) for n in range(1, OTHER_LENGTH_BINS + 1)]
        row.append(len(other) - sum(row[-OTHER_LENGTH_BINS:]))
    else:
        row += _OTHER_ZEROS
    row.append(1)
    return row


@dataclass(frozen=True)
class _Model:
    """One target's weights, folded for `estimate_tokens` (same sum as `features` x weights)."""

    rare_cjk: re.Pattern[str]
    per_byte: float
    per_char: float
    ascii: tuple[float, ...]  # weights of ASCII_PATTERNS
    other_singles: tuple[float, ...]  # weights of _OTHER_SINGLES
    other: tuple[tuple[bytes, tuple[bytes, ...], tuple[float, ...]], ...]  # longer n-grams
    tokens: dict[bytes, int]  # known word -> its token count (never 0)
    known_words: float  # per known word
    known_tokens: float  # per token of a known word
    unknown_bytes: float  # per byte of an unknown word
    cjk: float
    cost: dict[int, float]  # unknown ASCII word: weight of its length bin
    cost_more: float
    other_bytes: float  # non-ASCII unknown word: per-byte weight, minus the ASCII one
    other_cost: dict[int, float]  # ... and its length bin weight (the ASCII one subtracted)
    other_cost_more: float
    constant: float


@functools.cache
def _model(target: str) -> _Model:
    if tuple(_data.FEATURE_NAMES) != FEATURE_NAMES:  # pragma: no cover - guards regeneration
        msg = "ragbudget._estimate_data is stale: run benchmarks/estimator/calibrate.py --fit"
        raise RuntimeError(msg)
    w = dict(zip(FEATURE_NAMES, _data.WEIGHTS[target], strict=True))
    vocab = vocabulary(target)
    cost = {n: w[f"unknown_len_{n}"] for n in range(1, LENGTH_BINS + 1)}
    cost_more = w["unknown_len_more"]
    other_cost = {
        n: w[f"other_unknown_len_{n}"] - cost.get(n, cost_more)
        for n in range(1, OTHER_LENGTH_BINS + 1)
    }
    other_cost_more = w["other_unknown_len_more"] - cost_more
    return _Model(
        rare_cjk=vocab.rare_cjk,
        per_byte=w["bytes"],
        per_char=w["chars"],
        ascii=tuple(w[p.decode()] for p in ASCII_PATTERNS),
        other_singles=tuple(w[cls.decode()] for cls in _OTHER_SINGLES),
        other=tuple(
            (cls, longer, tuple(w[p.decode()] for p in longer))
            for cls, group in OTHER_GROUPS
            if (longer := tuple(p for p in group if len(p) > 1))
        ),
        tokens=vocab.words,
        known_words=w["known_words"],
        known_tokens=w["known_tokens"],
        unknown_bytes=w["unknown_bytes"],
        cjk=w["cjk_rare"],
        cost=cost,
        cost_more=cost_more,
        other_bytes=w["other_unknown_bytes"] - w["unknown_bytes"],
        other_cost=other_cost,
        other_cost_more=other_cost_more,
        constant=w["constant"],
    )


_BYTES_PER_TOKEN_FLOOR = 8
_FEW_UNKNOWN = 16  # below one unknown word in 16, index scans beat compress()


def estimate_tokens(text: str, target: str = DEFAULT_TARGET) -> int:
    """Estimate how many tokens a byte-pair tokenizer makes of `text`.

    `target` is `"max"` (default: safe for every encoding in TARGETS) or one of TARGETS.
    Deterministic; 0 for the empty string, otherwise between 1 and the UTF-8 length.
    Equal to `ceil(features(text) . weights)` clamped, computed without building the vector.
    """
    if target not in _data.WEIGHTS:
        msg = f"target must be one of {(DEFAULT_TARGET, *TARGETS)}, got {target!r}"
        raise ValueError(msg)
    if not text:
        return 0
    m = _model(target)
    data = text.encode("utf-8", "surrogatepass")
    size = len(data)
    ascii_only = size == len(text)
    classes = data.translate(_CLASSES) if ascii_only else data.translate(_CLASSES, _CONTINUATION)
    letters = data.translate(_WORD_TABLE)
    words = letters.split()
    # One lookup per word: a known word's token count, or 0 for an unknown word (priced by its
    # bytes and length bin). Token counts are small ints, shared objects: summing them is cheap.
    counts = list(map(m.tokens.get, words, repeat(0)))
    parts = [
        m.constant + m.per_byte * size + m.per_char * len(text),
        m.known_tokens * sum(counts),
    ]
    unknown: list[bytes] = []
    missing = counts.count(0)
    if missing:
        if missing * _FEW_UNKNOWN < len(words):  # few (prose): find them by C-level scans
            at = -1
            for _ in range(missing):
                at = counts.index(0, at + 1)
                unknown.append(words[at])
        else:
            unknown = list(compress(words, map(not_, counts)))
        lengths = list(map(len, unknown))
        parts.append(m.unknown_bytes * sum(lengths))
        parts.append(sum(map(m.cost.get, lengths, repeat(m.cost_more))))
    parts.append(m.known_words * (len(words) - len(unknown)))
    # all at once: skipping patterns whose class is absent costs more Python than it saves
    parts.append(sum(map(mul, map(classes.count, ASCII_PATTERNS), m.ascii)))
    if not ascii_only:
        # the classes of non-ASCII characters alone: short unless the text is mostly non-ASCII
        scripts = classes.translate(None, _ASCII_CLASSES)
        parts.append(sum(map(mul, map(scripts.count, _OTHER_SINGLES), m.other_singles)))
        for cls, group, weights in m.other:
            if cls in scripts:
                parts.append(sum(map(mul, map(classes.count, group), weights)))
        if any(map(scripts.__contains__, _CJK_CLASSES)):
            # the regex scans only the non-ASCII characters (UTF-8 minus its ASCII bytes)
            wide = data.translate(None, _ASCII_BYTES).decode("utf-8", "surrogatepass")
            parts.append(m.cjk * len(m.rare_cjk.findall(wide)))
        other = list(filterfalse(bytes.isascii, unknown))
        if other:
            lengths = list(map(len, other))
            parts.append(m.other_bytes * sum(lengths))
            parts.append(sum(map(m.other_cost.get, lengths, repeat(m.other_cost_more))))
    raw = math.ceil(sum(parts))
    # A floor for scripts and mixes the calibration corpus barely saw (e.g. Armenian after
    # digits), where the linear model can go absurdly low: no tokenizer we target averages
    # more than 8 UTF-8 bytes a token outside long whitespace runs.
    return min(max(raw, 1, -(-size // _BYTES_PER_TOKEN_FLOOR)), size)
