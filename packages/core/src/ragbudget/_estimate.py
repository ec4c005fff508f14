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
3. Scripts. One regex substitution over the non-ASCII characters deletes the runs of those
   that are single tokens in the target encoding: what is left are the characters no token
   holds alone, which a byte-level tokenizer spells out in pieces of their UTF-8 bytes (rare
   Han characters, most of Tibetan, Odia or Cherokee); they are counted, and the kana, Han
   and Hangul among them again. Where one UTF-8 lead byte spans scripts that tokenizers treat
   very differently (U+0900-0FFF: Devanagari to Tibetan; U+1000-1FFF: Myanmar, Georgian,
   Ethiopic, Khmer, Latin and Greek Extended), the characters of each script block are
   counted by their second byte, block by block, on the non-ASCII bytes alone.

The count is a linear combination of these features, with weights fitted per target encoding
on a corpus of real text (`benchmarks/estimator/calibrate.py`), scaled so that under-counting
stays rare, rounded up, and clamped to `[floor_tokens(text), bytes]` for non-empty text: a
byte-level tokenizer never makes more tokens than bytes, and `floor_tokens` is what the
tokenizers' pre-splitting forces (a token per ASCII word, per 3 digits, per character no token
holds alone, per 8 letters, digits or other characters), which keeps text unlike the corpus
(random symbols, control characters, scripts it lacks) from being estimated absurdly low.
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

__all__ = [
    "DEFAULT_TARGET",
    "TARGETS",
    "Vocabulary",
    "estimate_tokens",
    "features",
    "floor_tokens",
    "vocabulary",
]

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
        elif byte <= 0xD6:
            cls = "y"  # Armenian (and Hebrew points)
        elif byte == 0xD7:
            cls = "b"  # Hebrew letters
        elif byte <= 0xDF:
            cls = "r"  # Arabic, Syriac, Thaana, NKo
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
    for group in (("c", "c."), *((cls,) for cls in "glLeSmybrixsjhkpf"))
)
"""Class n-grams that only occur in text with non-ASCII characters."""

OTHER_PATTERNS: tuple[bytes, ...] = tuple(p for _, group in OTHER_GROUPS for p in group)


def _blocks(lead: int, spec: str) -> tuple[tuple[str, tuple[bytes, ...]], ...]:
    """Script blocks within one UTF-8 lead byte, by the second byte's range (`name:lo-hi`)."""
    out = []
    for item in spec.split():
        name, _, span = item.partition(":")
        low, _, high = span.partition("-")
        seconds = range(int(low, 16), int(high or low, 16) + 1)
        out.append((name, tuple(bytes((lead, second)) for second in seconds)))
    return tuple(out)


SCRIPT_BLOCKS: tuple[tuple[bytes, tuple[tuple[str, tuple[bytes, ...]], ...]], ...] = (
    (
        b"i",
        _blocks(
            0xE0,
            "deva:a4-a5 beng:a6-a7 guru:a8-a9 gujr:aa-ab orya:ac-ad taml:ae-af telu:b0-b1 "
            "knda:b2-b3 mlym:b4-b5 sinh:b6-b7 thai:b8-b9 laoo:ba-bb tibt:bc-bf",
        ),
    ),
    (b"x", _blocks(0xE1, "mymr:80-81 geor:82-83 ethi:88-8d khmr:9e-9f latx:b8-bb grex:bc-bf")),
)
"""Characters per script block (UTF-8 lead and second byte), where one lead byte spans scripts
that byte-pair tokenizers treat very differently (Georgian and Ethiopic, Tamil and Hindi)."""
SCRIPT_NAMES: tuple[str, ...] = tuple(name for _, blocks in SCRIPT_BLOCKS for name, _ in blocks)

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
_SCRIPT_ZEROS = (0,) * len(SCRIPT_NAMES)


_CJK = re.compile("[\u3000-\u9fff\uac00-\ud7af]")
"""Kana, CJK punctuation, Han and Hangul syllables."""


@functools.cache
def _singles_pattern(single: str) -> re.Pattern[str]:
    """Runs of non-ASCII characters that ARE single tokens (deleted, they leave the rare)."""
    if not single:
        return re.compile("(?!)")
    return re.compile(f"[{''.join(map(re.escape, sorted(single)))}]+")


def _rare(wide: bytes, singles: re.Pattern[str]) -> str:
    """The characters of `wide` (UTF-8 without ASCII bytes) that no token holds alone."""
    return singles.sub("", wide.decode("utf-8", "surrogatepass"))


@dataclass(frozen=True)
class Vocabulary:
    """What one target knows: frequent words with their token counts (after a space), the
    non-ASCII characters that are single tokens, and (for the floor) those that are not, in
    each encoding the target must cover."""

    words: dict[bytes, int]
    singles: re.Pattern[str]
    floor_singles: tuple[re.Pattern[str], ...]

    @classmethod
    def build(
        cls,
        words: Iterable[str],
        tokens: Iterable[int],
        single: str,
        floor_singles: Iterable[str] = (),
    ) -> Vocabulary:
        """`single`: the non-ASCII characters that are single tokens (for the rare-character
        features); `floor_singles`: the same per encoding for the floor (default: `single`)."""
        table = {w.encode(): n for w, n in zip(words, tokens, strict=True)}
        floors = tuple(map(_singles_pattern, floor_singles or (single,)))
        return cls(table, _singles_pattern(single), floors)


@functools.cache
def vocabulary(target: str) -> Vocabulary:
    """The shipped vocabulary of `target` (DEFAULT_TARGET or one of TARGETS)."""
    words = _data.WORDS.split(" ")
    if target != DEFAULT_TARGET:
        tokens: Iterable[int] = map(int, _data.TOKENS[target])
        return Vocabulary.build(words, tokens, _data.SINGLE[target])
    tokens = map(max, *(map(int, _data.TOKENS[t]) for t in TARGETS))
    floors = [_data.SINGLE[t] for t in TARGETS]
    return Vocabulary.build(words, tokens, _data.SINGLE[target], floors)


_CHARS_PER_TOKEN_FLOOR = 8
_SPACING = b" \n\t-_."  # classes of ASCII whitespace, controls and punctuation


def floor_tokens(text: str, vocab: Vocabulary) -> int:
    """The least the estimate returns for non-empty `text`: a lower bound on the token count
    that holds whatever the text, for text unlike the calibration corpus (random symbols,
    control characters, rare scripts mixed), where the linear model can go absurdly low.

    The largest of: 1; a token per 8 letters, digits and non-ASCII characters (no tokenizer we
    target averages more: whitespace and punctuation are left out, as rule lines like `-----`
    and indentation make long tokens); and the sum of what the tokenizers' pre-splitting
    forces:
    - a token per word of ASCII letters (a letter run is its own piece, at least one token),
    - a token per 3 digits (numbers are split into groups of at most 3 digits),
    - a token per character that no token holds alone, in the words with non-ASCII letters
      that the vocabulary does not know (the most of any encoding `vocab` covers): measured,
      not derived, as such characters cost 1.9-2.2 tokens each or more in real text.
    On the 40,000 chunks of the calibration corpus this sum never exceeds the true count.
    """
    data = text.encode("utf-8", "surrogatepass")
    classes = data.translate(_CLASSES, _CONTINUATION)
    words = data.translate(_WORD_TABLE).split()
    forced = sum(map(bytes.isascii, words)) + -(-classes.count(b"0") // 3)
    other = [w for w in words if not w.isascii() and w not in vocab.words]
    forced += _forced_rare(other, vocab.floor_singles)
    return max(_solid_floor(classes), forced)


def _solid_floor(classes: bytes) -> int:
    """1, or a token per 8 characters outside whitespace and punctuation (see `floor_tokens`)."""
    return max(1, -(-len(classes.translate(None, _SPACING)) // _CHARS_PER_TOKEN_FLOOR))


def _forced_rare(other: list[bytes], floor_singles: tuple[re.Pattern[str], ...]) -> int:
    """The characters no token holds alone in the unknown non-ASCII words `other`, the most
    of any encoding (see `floor_tokens`)."""
    if not other:
        return 0
    wide = b"".join(other).translate(None, _ASCII_BYTES)
    return max(len(_rare(wide, singles)) for singles in floor_singles)


FEATURE_NAMES: tuple[str, ...] = (
    "bytes",
    "chars",
    *(p.decode() for p in ASCII_PATTERNS),
    *(p.decode() for p in OTHER_PATTERNS),
    "known_words",
    "known_tokens",
    "unknown_bytes",
    "cjk_rare",
    "rare",
    *SCRIPT_NAMES,
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
        cjk = rare = 0
    else:
        for cls, group in OTHER_GROUPS:
            row += map(classes.count, group) if cls in classes else (0,) * len(group)
        wide = data.translate(None, _ASCII_BYTES)
        residue = _rare(wide, vocab.singles)
        rare = len(residue)
        cjk = len(_CJK.findall(residue))
        scripts = [
            sum(map(wide.count, prefixes)) if cls in classes else 0
            for cls, blocks in SCRIPT_BLOCKS
            for _, prefixes in blocks
        ]
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
    row += (sum(map(len, unknown)), cjk, rare)
    row += _SCRIPT_ZEROS if ascii_only else scripts
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

    singles: re.Pattern[str]
    floor_singles: tuple[re.Pattern[str], ...]  # for the floor (see `floor_tokens`)
    per_byte: float
    per_char: float
    ascii: tuple[float, ...]  # weights of ASCII_PATTERNS
    other_singles: tuple[float, ...]  # weights of _OTHER_SINGLES
    other: tuple[tuple[bytes, tuple[bytes, ...], tuple[float, ...]], ...]  # longer n-grams
    tokens: dict[bytes, int]  # known word -> its token count (never 0)
    known_words: float  # per known word
    known_tokens: float  # per token of a known word
    unknown_bytes: float  # per byte of an unknown word
    cjk: float  # per kana, Han or Hangul character that is not a single token
    per_rare: float  # per non-ASCII character that is not a single token
    # per class in SCRIPT_BLOCKS: (class, lead byte, second byte -> (its block's prefixes, weight))
    blocks: tuple[tuple[bytes, int, dict[int, tuple[tuple[bytes, ...], float]]], ...]
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
        singles=vocab.singles,
        floor_singles=vocab.floor_singles,
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
        per_rare=w["rare"],
        blocks=tuple(
            (
                cls,
                blocks[0][1][0][0],
                {p[1]: (prefixes, w[name]) for name, prefixes in blocks for p in prefixes},
            )
            for cls, blocks in SCRIPT_BLOCKS
        ),
        cost=cost,
        cost_more=cost_more,
        other_bytes=w["other_unknown_bytes"] - w["unknown_bytes"],
        other_cost=other_cost,
        other_cost_more=other_cost_more,
        constant=w["constant"],
    )


@functools.lru_cache(maxsize=256)
def _next_block(lead: int, seen: bytes) -> re.Pattern[bytes]:
    """A `lead` byte followed by a second byte not in `seen`."""
    return re.compile(re.escape(bytes((lead,))) + b"[^" + re.escape(seen) + b"]")


def _block_sum(
    wide: bytes, lead: int, total: int, by_second: dict[int, tuple[tuple[bytes, ...], float]]
) -> float:
    """The weighted SCRIPT_BLOCKS features of one lead byte, from the non-ASCII bytes `wide`
    holding `total` characters with that lead. Only blocks that occur are counted, found one
    at a time (text rarely mixes more than two scripts of one lead byte)."""
    out = 0.0
    seen = b""
    at = wide.find(lead)
    while at >= 0:
        prefixes, weight = by_second.get(wide[at + 1], ((wide[at : at + 2],), 0.0))
        count = sum(map(wide.count, prefixes))
        out += weight * count
        total -= count
        if total <= 0:
            break
        seen += bytes(prefix[1] for prefix in prefixes)
        found = _next_block(lead, seen).search(wide)
        at = found.start() if found else -1
    return out


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
    other: list[bytes] = []  # unknown words with non-ASCII letters
    other_size = 0
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
        # the non-ASCII characters alone (UTF-8 minus its ASCII bytes)
        wide = data.translate(None, _ASCII_BYTES)
        # the characters no token holds alone (deleting runs of those that are single tokens)
        residue = _rare(wide, m.singles)
        if residue:
            parts.append(m.per_rare * len(residue))
            if any(map(scripts.__contains__, _CJK_CLASSES)):
                parts.append(m.cjk * len(_CJK.findall(residue)))
        for cls, lead, by_second in m.blocks:
            if cls in scripts:
                parts.append(_block_sum(wide, lead, scripts.count(cls), by_second))
        other = list(filterfalse(bytes.isascii, unknown))
        if other:
            lengths = list(map(len, other))
            other_size = sum(lengths)
            parts.append(m.other_bytes * other_size)
            parts.append(sum(map(m.other_cost.get, lengths, repeat(m.other_cost_more))))
    raw = math.ceil(sum(parts))
    # The floor (see `floor_tokens`), computed in full only where it might bind: the forced
    # tokens are at most one per word, per 3 digits, and per 2 bytes of unknown non-ASCII words.
    floor = _solid_floor(classes)
    digits = -(-classes.count(b"0") // 3)
    if ascii_only:
        floor = max(floor, len(words) + digits)
    elif raw < len(words) + digits + other_size // 2:
        forced = sum(map(bytes.isascii, words)) + digits + _forced_rare(other, m.floor_singles)
        floor = max(floor, forced)
    return min(max(raw, floor), size)
