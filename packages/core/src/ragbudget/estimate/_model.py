"""A dependency-free token estimate calibrated against byte-pair tokenizers (tiktoken).

How it works, in C-speed passes (no Python loop per character; per word only where the word
is unknown and long):

1. Character classes. The text is UTF-8 encoded and `bytes.translate` maps every character to
   one class byte (see `ragbudget.estimate._text`). `bytes.count` of a few class n-grams then
   measures what a byte-pair tokenizer reacts to beyond words: digit groups (`000`),
   punctuation (and a mark before a lowercase letter, which joins the word: `.name`),
   whitespace runs and indentation, line breaks; the script classes are counted
   on the non-ASCII classes alone (a short string unless the text is mostly non-ASCII).
2. Words. ASCII non-letters become spaces and `bytes.split` yields the words. The vocabulary
   holds the most frequent words of the calibration corpus found in 3 of its origins (up to
   32,000: English, code identifiers, and the common words of every language in it) with
   each word's token count after a space in the target encoding. One dict lookup per word
   gives a known word's token count (0 for an unknown word); every unknown word is priced by
   its length (a weight per length up to 24 bytes, a per-byte weight, and separate length
   weights for words with non-ASCII letters). For `o200k_base`, the unknown words with
   non-ASCII letters are also priced by their cuts: the pairs of adjacent characters that no
   token of the encoding holds (read from its vocabulary; `cuts`), where the tokenizer must
   cut the word (Uyghur's `جۇ`, which o200k holds in no token, against Arabic's `ال`).
3. Scripts. One regex substitution over the non-ASCII characters deletes the runs of those
   that are single tokens in the target encoding: what is left are the characters no token
   holds alone, which a byte-level tokenizer spells out in pieces of their UTF-8 bytes; they
   are counted, and the kana, Han and Hangul among them again. One more substitution, where
   their scripts occur, counts the weak letters: single tokens that few longer tokens of the
   encoding hold (read from its vocabulary: Kazakh's Ұ in o200k, accented Latin letters such
   as è in cl100k), which cut the words holding them.
   Where one UTF-8 lead byte spans scripts that tokenizers treat very differently
   (Devanagari to Tibetan; Myanmar, Georgian, Ethiopic, Khmer...), the characters of each
   script block are counted by their second byte.
   Greek and Cyrillic capitals are counted too (one `bytes.translate` of the non-ASCII bytes):
   a word in capitals makes more tokens than the same word in lowercase.

The count is a linear combination of these features, with weights fitted per target encoding
on a corpus of real text (`tools/estimator/calibrate.py`), scaled so that under-counting stays
rare, rounded up, and clamped to `[floor_tokens(text), bytes]` for non-empty text: a
byte-level tokenizer never makes more tokens than bytes, and `floor_tokens`
(`ragbudget.estimate._floor`) counts text the model does not recognise (random letters,
sequences, base64, symbol soup, rare scripts) piece by piece, as the tokenizers split it.
The calibrated data is a package data file read once, on first use (`ragbudget.estimate._data`).
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass
from itertools import compress, filterfalse, repeat
from operator import itemgetter, mul, not_

from ragbudget.estimate._blocks import cuts
from ragbudget.estimate._data import load
from ragbudget.estimate._floor import (
    bare_tokens,
    clear_caches,
    floor_tokens,
    foreign_tokens,
    isolated_tokens,
    other_tokens,
    solid_floor,
    spelled_starts,
    word_tokens,
)
from ragbudget.estimate._pieces import gap_bound, plain_spaces, text_bound, text_tokens
from ragbudget.estimate._segments import spelled, spelling_bounds, spelling_tokens
from ragbudget.estimate._text import (
    _ASCII_BYTES,
    _ASCII_CLASSES,
    _CAPITALS,
    _CJK,
    _CJK_CLASSES,
    _CLASSES,
    _CONTINUATION,
    _OTHER_SINGLES,
    _WORD_TABLE,
    ASCII_PATTERNS,
    DEFAULT_TARGET,
    FEATURE_NAMES,
    LENGTH_BINS,
    OTHER_GROUPS,
    OTHER_LENGTH_BINS,
    OTHER_PATTERNS,
    SCRIPT_BLOCKS,
    SCRIPT_NAMES,
    TARGETS,
    Vocabulary,
    features,
    one_break,
    vocabulary,
)

__all__ = [
    "ASCII_PATTERNS",
    "DEFAULT_TARGET",
    "FEATURE_NAMES",
    "OTHER_GROUPS",
    "OTHER_PATTERNS",
    "SCRIPT_BLOCKS",
    "SCRIPT_NAMES",
    "TARGETS",
    "Vocabulary",
    "clear_caches",
    "estimate_tokens",
    "features",
    "floor_tokens",
    "vocabulary",
]

_TARGET_NAMES = (DEFAULT_TARGET, *TARGETS)


@dataclass(frozen=True)
class _Model:
    """One target's weights, folded for `estimate_tokens` (same sum as `features` x weights)."""

    vocab: Vocabulary  # for the floor (see `floor_tokens`)
    singles: re.Pattern[str]
    weak: re.Pattern[str]
    weak_classes: bytes  # the classes of the weak letters (none in the text: no weak letter)
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
    per_weak: float  # per single-token letter that few longer tokens hold
    capitals: float  # per Greek or Cyrillic capital letter
    # per class in SCRIPT_BLOCKS: (class, lead byte, second byte -> (its block's prefixes, weight))
    blocks: tuple[tuple[bytes, int, dict[int, tuple[tuple[bytes, ...], float]]], ...]
    cost: dict[int, float]  # unknown ASCII word: weight of its length bin
    cost_more: float
    other_bytes: float  # non-ASCII unknown word: per-byte weight, minus the ASCII one
    other_cuts: float  # ... per pair of its characters that no token holds
    held: frozenset[int]  # the pairs that tokens hold (`cuts`)
    other_cost: dict[int, float]  # ... and its length bin weight (the ASCII one subtracted)
    other_cost_more: float
    constant: float


@functools.cache
def _model(target: str) -> _Model:
    data = load()
    if data.feature_names != FEATURE_NAMES:  # pragma: no cover - guards regeneration
        msg = "ragbudget/estimate/estimate_v3.json is stale: run tools/estimator/calibrate.py --fit"
        raise RuntimeError(msg)
    w = dict(zip(FEATURE_NAMES, data.weights[target], strict=True))
    vocab = vocabulary(target)
    cost = {n: w[f"unknown_len_{n}"] for n in range(1, LENGTH_BINS + 1)}
    cost_more = w["unknown_len_more"]
    other_cost = {
        n: w[f"other_unknown_len_{n}"] - cost.get(n, cost_more)
        for n in range(1, OTHER_LENGTH_BINS + 1)
    }
    other_cost_more = w["other_unknown_len_more"] - cost_more
    return _Model(
        vocab=vocab,
        singles=vocab.singles,
        weak=vocab.weak,
        weak_classes=vocab.weak_classes,
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
        per_weak=w["weak"],
        capitals=w["capitals"],
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
        other_cuts=w["other_unknown_cuts"],
        held=vocab.held,
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
# where text_bound's counts are in ASCII_PATTERNS: digits, digit pairs and triples, symbols
# (classes ".", "-", "_", controls; never overlapping), line breaks
_TEXT_BOUND = tuple(
    ASCII_PATTERNS.index(p) for p in (b"0", b"00", b"000", b".", b"-", b"_", b"\t", b"\n")
)
# gap_bound's counts in ASCII_PATTERNS: spaces before a digit, tabs and controls
_SPACED_DIGITS = ASCII_PATTERNS.index(b" 0")
_CONTROLS = ASCII_PATTERNS.index(b"\t")
# where text_tokens's counts are: digits, digit pairs and triples, line breaks, blank lines,
# spaces before a digit, tabs and control characters
_TEXT_COUNTS = tuple(
    ASCII_PATTERNS.index(p) for p in (b"0", b"00", b"000", b"\n", b"\n\n", b" 0", b"\t")
)
# bare_tokens's bound in ASCII_PATTERNS: line breaks, blank lines, indented lines
_BREAKS, _BLANK, _INDENT = map(ASCII_PATTERNS.index, (b"\n", b"\n\n", b"\n "))
_SOLID_CHARS = 8  # solid_floor: a token per 8 characters at most
# the classes of ASCII characters -> "a", of the others -> "b" (isolated_tokens' bound)
_SIDES = bytes(ord("a") if c in _ASCII_CLASSES else ord("b") for c in range(256))


def estimate_tokens(text: str, target: str = DEFAULT_TARGET) -> int:
    """Estimate how many tokens a byte-pair tokenizer makes of `text`.

    `target` is `"max"` (default: safe for every encoding in TARGETS) or one of TARGETS.
    Deterministic; 0 for the empty string, otherwise between 1 and the UTF-8 length.
    Equal to `ceil(features(text) . weights)` clamped, computed without building the vector,
    for text without Unicode spaces other than U+0020 (no-break, thin, ideographic...); with
    them, the estimate of the text with each run replaced by a space, plus the run's tokens
    (`plain_spaces`).
    """
    if target not in _TARGET_NAMES:
        msg = f"target must be one of {(DEFAULT_TARGET, *TARGETS)}, got {target!r}"
        raise ValueError(msg)
    if not text:
        return 0
    # `\r\n` costs what `\n` does; a run of a Unicode space, a space and the run's tokens
    m = _model(target)
    given = text
    text, runs = plain_spaces(one_break(text), m.vocab)
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
    counted = list(map(classes.count, ASCII_PATTERNS))
    parts.append(sum(map(mul, counted, m.ascii)))
    if not ascii_only:
        # the classes of non-ASCII characters alone: short unless the text is mostly non-ASCII
        scripts = classes.translate(None, _ASCII_CLASSES)
        parts.append(sum(map(mul, map(scripts.count, _OTHER_SINGLES), m.other_singles)))
        for cls, group, weights in m.other:
            if cls in scripts:
                parts.append(sum(map(mul, map(classes.count, group), weights)))
        # the non-ASCII characters alone (UTF-8 minus its ASCII bytes)
        wide = data.translate(None, _ASCII_BYTES)
        if b"c" in scripts or b"g" in scripts:  # Cyrillic or Greek: count the capitals
            parts.append(m.capitals * wide.translate(_CAPITALS).count(b"DU"))
        # the characters no token holds alone (deleting runs of those that are single tokens)
        chars = wide.decode("utf-8", "surrogatepass")
        residue = m.singles.sub("", chars)
        if any(map(scripts.__contains__, m.weak_classes)):  # single tokens few others hold
            parts.append(m.per_weak * (len(chars) - len(m.weak.sub("", chars))))
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
            parts.append(m.other_cuts * cuts(other, m.held))  # 0 without held pairs
            parts.append(sum(map(m.other_cost.get, lengths, repeat(m.other_cost_more))))
    raw = math.ceil(sum(parts))
    if ascii_only:
        other = []
    elif other:
        unknown = list(filter(bytes.isascii, unknown))
    # The floor (`floor_tokens`), computed only as far as it could exceed `raw`: the passes
    # over digits, symbols, gaps and line breaks only when their bound from the class counts
    # could (`text_bound`, `gap_bound`).
    # the unknown words as `unknown_tokens` prices them, but for their spelling (`fewest`)
    as_words: list[bytes] = []
    alone, others = word_tokens(unknown, m.vocab, as_words), other_tokens(other, m.vocab, data)
    foreign = foreign_tokens(unknown, other, len(words), m.vocab)
    priced = max(alone + others, foreign)
    forced = sum(counts) + priced
    lift = 0  # at most what spelling the words can add (`spelling_bounds`)
    bounds: list[int] = []
    if as_words and spelled(len(unknown), len(words)):
        bounds = spelling_bounds(as_words, m.vocab)
        lift = max(0, max(max(alone, *bounds) + others, foreign) - priced)
    # the known words without a space before them (`bare_tokens`), after a line break not
    # followed by a line break or a space and at the text's start: `bare_most` more each
    starts = m.vocab.bare_most * (counted[_BREAKS] - counted[_BLANK] - counted[_INDENT] + 1)
    bound = forced + lift + text_bound(*itemgetter(*_TEXT_BOUND)(counted))
    spaced, controls = counted[_SPACED_DIGITS], counted[_CONTROLS]
    gaps = gap_bound(0, spaced, controls)  # and the double spaces only where this is not over
    if (
        bound + starts + gaps > raw
        or bound + starts + gap_bound(classes.count(b"  "), spaced, controls) > raw
    ):
        found = bare_tokens(data, m.vocab)  # a fast search, before the slower pass below
        forced += found
        bound += found
        if bound + gaps > raw or bound + gap_bound(classes.count(b"  "), spaced, controls) > raw:
            forced += text_tokens(
                data,
                m.vocab.symbol_runs,
                itemgetter(*_TEXT_COUNTS)(counted),
                m.vocab.space_runs,
                m.vocab.space_counts,
            )
    if lift and forced + lift > raw:  # the spelling could lift the floor over the model
        # a spelling of this or less leaves max(raw, floor) as it is: the spelling may stop
        # there (`spelling_tokens`' limit)
        limit = max(alone, foreign - others, raw - forced + priced - others)
        first = spelled_starts(data, as_words)  # spelled with nothing before them
        alone = max(alone, spelling_tokens(as_words, m.vocab, limit, first, bounds))
        forced += max(alone + others, foreign) - priced
    if len(classes) > _SOLID_CHARS * raw:  # else solid_floor(classes) <= raw
        forced = max(forced, solid_floor(classes))
    if other:  # characters that are a token of their own beside ASCII are in unknown words
        sides = classes.translate(_SIDES)  # a run of them is a run of non-ASCII characters:
        runs_of_them = sides.count(b"ab") + sides.startswith(b"b")  # at most as many
        if 2 * runs_of_them + 1 > max(raw, forced):  # their count's bound
            forced = max(forced, isolated_tokens(text, m.vocab))
    estimate = min(max(raw, forced), size) + runs
    if runs:  # never more than the bytes: a lone Ogham space mark is 3 tokens, not a space and 3
        return min(estimate, len(given.encode("utf-8", "surrogatepass")))
    return estimate
