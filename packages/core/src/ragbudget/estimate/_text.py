"""Character classes, class n-grams, script blocks and the vocabulary of the token estimate.

The text-side half of `ragbudget.estimate._model`: what each byte of UTF-8 text is (a class byte per
character, by ASCII class or by the script its UTF-8 lead byte starts), which class n-grams and
script blocks are counted, the vocabulary of frequent words with their token counts (and,
for o200k, the pairs of characters its tokens hold, whose absence in a word is a cut), and
`features`, the vector the weights multiply (used by the fitting tools and the tests; the
estimate itself folds the same sum without building it).
"""

from __future__ import annotations

import base64
import functools
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import filterfalse

from ragbudget.estimate._blocks import BlockCosts, Isolated, block_costs, cuts, held_codes
from ragbudget.estimate._data import cuts_table, load, most_counts, most_digits, script_extras
from ragbudget.estimate._glued import Glued
from ragbudget.estimate._pieces import common_runs
from ragbudget.estimate._segments import Segments

TARGETS = ("cl100k_base", "o200k_base")
"""Encodings the estimate can be calibrated to, besides the default."""

DEFAULT_TARGET = "max"
"""The default target: the larger of the counts of every encoding in `TARGETS`."""

FOREIGN_COSTS = {"cl100k_base": 0.474, "o200k_base": 0.379}
"""Per encoding, tokens per character that unknown words cost at least in a text where they
are half of the words or more (a language the vocabulary lacks): the 75th percentile of what
they cost in the calibration corpus's fitted European-language chunks where they are
(`python tools/estimator/unseen.py --words`). The 25th percentile (0.405 and 0.333) left 10
unseen catalogues more than 10% under for the default, the median (0.439 and 0.353) 6, the
75th percentile 2, for held-out European medians of 6.0%, 6.1% and 6.5% against cl100k (see
docs/estimator.md). Used by the floor."""


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
# floor(len / 4) over runs of spaces; `.a` a punctuation mark before a lowercase letter, which
# the tokenizers' pre-splitting joins to the word (`.name`, `/usr`, `(self`). Few, because every
# count is one pass.
ASCII_PATTERNS: tuple[bytes, ...] = tuple(
    map(
        _pattern,
        (
            *("A", "0", "_", "-", ".", "00", "000", "..", "--"),
            *("~s~s~s~s", "~s~s~s~s~s~s~s~s", "~s0", "~s.", "~n"),
            *("~n~n", "~n~s", ".~n", "~t", ".a"),
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
_OTHER_ZEROS = (0,) * (OTHER_LENGTH_BINS + 3)
_SCRIPT_ZEROS = (0,) * len(SCRIPT_NAMES)


_CJK = re.compile("[\u3000-\u9fff\uac00-\ud7af]")
"""Kana, CJK punctuation, Han and Hangul syllables."""

_CAPITALS = bytes(
    ord("D") if byte in (0xCE, 0xD0) else ord("U") if 0x80 <= byte <= 0xAF else 0x20
    for byte in range(256)
)
"""Maps UTF-8 without its ASCII bytes so that `DU` marks a Greek or Cyrillic capital (a lead
byte CE or D0 and a second byte 80-AF: U+0380-03AF, U+0400-042F; 4 lowercase Greek letters
with tonos too): capitals split words into more tokens (`ДИРЕКТОРИЈУМ`)."""


@functools.cache
def _singles_pattern(single: str) -> re.Pattern[str]:
    """Runs of non-ASCII characters that ARE single tokens (deleted, they leave the rare)."""
    if not single:
        return re.compile("(?!)")
    return re.compile(f"[{''.join(map(re.escape, sorted(single)))}]+")


def _chars_pattern(chars: str) -> re.Pattern[str]:
    """Any one of `chars`."""
    return re.compile(f"[{''.join(map(re.escape, sorted(chars)))}]" if chars else "(?!)")


def _pairs_pattern(pairs: str) -> re.Pattern[bytes]:
    """Where a rare letter pair starts (lowercase text): one alternative per first letter."""
    follow: dict[str, str] = {}
    for pair in pairs.split():
        follow[pair[0]] = follow.get(pair[0], "") + pair[1]
    alternatives = [f"{a}(?=[{b}])" for a, b in sorted(follow.items())]
    return re.compile("|".join(alternatives or ["(?!)"]).encode())


@dataclass(frozen=True)
class Vocabulary:
    """What one target knows: frequent words with their token counts (after a space), the
    non-ASCII characters that are single tokens, and (for the floor) those that are not and
    what they cost in each encoding the target must cover, and the letter pairs natural words
    rarely hold."""

    words: dict[bytes, int]
    singles: re.Pattern[str]
    floor_singles: tuple[re.Pattern[str], ...]
    floor_costs: tuple[BlockCosts, ...] = ()
    """Aligned with `floor_singles`: what its rare characters cost, by block."""
    rare_pairs: re.Pattern[bytes] = re.compile(b"(?!)")
    floor_spelled: tuple[re.Pattern[str], ...] = ()
    """Aligned with `floor_singles`: the characters of scripts spelled a character at a time."""
    weak: re.Pattern[str] = re.compile("(?!)")
    """Runs of the single-token letters that few longer tokens hold (counted as `weak`)."""
    weak_classes: bytes = b""
    """The character classes (`_CLASSES`) of those letters: text with none of them has none."""
    spelled_classes: bytes = b""
    """The character classes of the characters of `floor_spelled` (of every encoding)."""
    foreign: float = 0.0
    """Tokens per character that unknown words cost at least where they are half of a text's
    words or more (`FOREIGN_COSTS`, the most of any encoding covered)."""
    symbol_runs: frozenset[bytes] = frozenset()
    """Runs of ASCII symbols that a token of every encoding covered holds whole: every lone
    symbol, and the runs of 2 or more that their tokens hold; any other run is 2 tokens at
    least (for the floor)."""
    held: frozenset[int] = frozenset()
    """Pairs of adjacent characters, one of them non-ASCII at least, that some token of every
    encoding covered holds, and every pair of ASCII letters, as `pair_code`s (`cuts`)."""
    space_runs: tuple[tuple[int, ...], ...] = ()
    """Per encoding covered, the lengths of the runs of spaces that one of its tokens holds,
    ascending (1 to 79 or 81, then 83, 87, 91, 95 and 128): a longer run is several tokens
    (for the floor)."""
    floor_isolated: tuple[Isolated, ...] = ()
    """Aligned with `floor_singles`: the characters that are a token of their own beside ASCII."""
    wide_runs: re.Pattern[str] = re.compile("(?!)")
    """Runs of one Unicode space other than the ASCII one (`plain_spaces`)."""
    wide_costs: dict[str, tuple[tuple[int, int], ...]] = field(default_factory=dict)
    """Each of those spaces -> per encoding covered, the tokens one makes alone and the
    longest run of it one token holds (`EstimateData.wide_spaces`)."""
    segments: tuple[Segments, ...] = ()
    """Per encoding covered, the runs of ASCII letters its tokens hold (`fewest`)."""
    bare: dict[bytes, int] = field(default_factory=dict)
    """The words whose count without a space before them differs -> by how much (for the
    floor: `bare_tokens`)."""
    bare_most: int = 0
    """The most of those: what a word without a space before it costs more at most."""
    letter_cuts: tuple[bytes, ...] = ()
    """Per encoding covered, a `bytes.translate` table: ASCII letters -> "a", the lead bytes no
    token holds right after one -> "L", the continuation bytes none holds right before one ->
    "C", the rest -> "x" (`EstimateData.letter_cuts`; `aL` and `Ca` are cuts between tokens)."""
    byte_pairs: tuple[bytes, ...] = ()
    """Per encoding covered, the pairs of adjacent bytes some token holds, a bit each (bit
    `a << 8 | b`; `EstimateData.byte_pairs`): a cut between tokens lies between any other two."""
    space_counts: tuple[tuple[int, ...], tuple[int, ...]] = ((), ())
    """The most tokens of the encodings covered that a run of 0, 1, 2... spaces makes alone,
    and followed by a line break (`EstimateData.space_counts`; for the floor)."""
    scripts: dict[bytes, float] = field(default_factory=dict)
    """Scripts whose unknown characters cost more than `foreign`: UTF-8 prefix -> how much
    more per character, the most of the encodings covered (`EstimateData.script_costs`)."""
    glued: tuple[Glued, ...] = ()
    """Per encoding covered, the pairs of an ASCII letter and a non-ASCII character tokens hold
    (`EstimateData.glued`, `.glued_context`; none: the floor's rule is off, `glued_parts`)."""

    @classmethod
    def build(
        cls,
        words: Iterable[str],
        tokens: Iterable[int],
        single: str,
        floor_singles: Iterable[str] = (),
        *,
        floor_costs: Iterable[dict[str, int]] = (),
        rare_pairs: str = "",
        floor_spelled: Iterable[str] = (),
        weak: str = "",
        foreign: float = 0.0,
        symbol_runs: Iterable[str] = (),
        held: str = "",
        space_runs: Iterable[str] = (),
        wide_spaces: Iterable[str] = (),
        isolated: Iterable[str] = (),
        segments: Iterable[Segments] = (),
        bare: Iterable[int] = (),
        space_counts: Iterable[str] = (),
        letter_cuts: Iterable[str] = (),
        byte_pairs: Iterable[str] = (),
        script_costs: Iterable[str] = (),
        glued: Iterable[tuple[str, str]] = (),
    ) -> Vocabulary:
        """`single`: the non-ASCII characters that are single tokens (for the rare-character
        features); `floor_singles`: the same per encoding for the floor (default: `single`);
        `floor_costs`: per encoding, the expensive blocks (`EstimateData.char_costs`);
        `rare_pairs`: `EstimateData.rare_pairs`; `floor_spelled`: `EstimateData.spelled`;
        `weak`: the letters of `single` that few longer tokens hold (`EstimateData.weak`;
        others are ignored: a character that is not a single token is rare, not weak);
        `foreign`: see the field; `symbol_runs`: `EstimateData.symbol_runs` of each encoding
        covered; `held`: `EstimateData.held`, the pairs of `held` (2 characters each,
        concatenated); `space_runs`: `EstimateData.space_runs` of each encoding covered
        (an empty list: none held, the floor's rule for long runs of spaces is off);
        `wide_spaces`: `EstimateData.wide_spaces` of each encoding covered; `isolated`:
        `EstimateData.isolated` of each encoding covered; `segments`: the runs of ASCII
        letters of each encoding covered (`EstimateData.letter_runs`); `bare`: aligned with
        `words`, their counts without a space before them (`EstimateData.bare_tokens`);
        `space_counts`, `letter_cuts`, `byte_pairs`, `glued`: `EstimateData.space_counts`,
        `.letter_cuts`, `.byte_pairs`, `.script_costs`, `.glued` and `.glued_context`."""
        table = {w.encode(): n for w, n in zip(words, tokens, strict=True)}
        counts = tuple(bare)  # the words are unique: one count per key of `table`
        fresh = {w: n - table[w] for w, n in zip(table, counts, strict=True)} if counts else {}
        floors = tuple(map(_singles_pattern, floor_singles or (single,)))
        costs = tuple(BlockCosts.build(block_costs(c)) for c in floor_costs) or tuple(
            BlockCosts.build({}) for _ in floors
        )
        spelled_chars = tuple(floor_spelled)
        spelled = tuple(map(_chars_pattern, spelled_chars)) or tuple(
            _chars_pattern("") for _ in floors
        )
        pairs = _pairs_pattern(rare_pairs)
        weak = "".join(set(weak) & set(single))
        wide: dict[str, list[tuple[int, int]]] = {}
        for spec in wide_spaces:
            for char, alone, run in (item.split(":") for item in spec.split()):
                wide.setdefault(chr(int(char, 16)), []).append((int(alone), int(run)))
        return cls(
            table,
            _singles_pattern(single),
            floors,
            costs,
            pairs,
            spelled,
            _singles_pattern(weak),
            _classes_of(weak),
            _classes_of("".join(spelled_chars)),
            foreign,
            common_runs(symbol_runs),
            held_codes(held),
            tuple(tuple(sorted(map(int, runs.split()))) for runs in space_runs if runs),
            tuple(map(Isolated.build, isolated)) or tuple(Isolated.build("") for _ in floors),
            re.compile(f"([{''.join(sorted(wide))}])\\1*" if wide else "(?!)"),
            {char: tuple(costs) for char, costs in wide.items()},
            tuple(segments),
            {w: n for w, n in fresh.items() if n},
            max([0, *fresh.values()]),
            tuple(map(cuts_table, letter_cuts)),
            tuple(map(base64.b64decode, byte_pairs)),
            most_counts(space_counts),
            script_extras(script_costs, foreign),
            tuple(Glued.read(*spec) for spec in glued),
        )


def _classes_of(chars: str) -> bytes:
    """The character classes (`_CLASSES`, by UTF-8 lead byte) of `chars`."""
    return bytes(sorted({_CLASSES[c.encode("utf-8", "surrogatepass")[0]] for c in chars}))


@functools.cache
def vocabulary(target: str) -> Vocabulary:
    """The shipped vocabulary of `target` (DEFAULT_TARGET or one of TARGETS)."""
    data = load()
    covered = TARGETS if target == DEFAULT_TARGET else (target,)
    tokens = most_digits(data.tokens, covered, len(data.words))
    return Vocabulary.build(
        data.words,
        tokens,
        data.single[target],
        [data.single[t] for t in covered],
        floor_costs=[data.char_costs[t] for t in covered],
        rare_pairs=data.rare_pairs,
        floor_spelled=[data.spelled.get(t, "") for t in covered],
        weak=data.weak.get(target, ""),
        foreign=max(FOREIGN_COSTS[t] for t in covered),
        symbol_runs=[data.symbol_runs.get(t, "") for t in covered],
        held=data.held.get(target, ""),
        space_runs=[data.space_runs.get(t, "") for t in covered],
        wide_spaces=[data.wide_spaces.get(t, "") for t in covered],
        isolated=[data.isolated.get(t, "") for t in covered],
        segments=list(map(_segments, covered)),
        bare=most_digits(data.bare_tokens, covered, len(data.words)) if data.bare_tokens else (),
        space_counts=[data.space_counts.get(t, "") for t in covered],
        letter_cuts=[data.letter_cuts[t] for t in covered if t in data.letter_cuts],
        byte_pairs=[data.byte_pairs[t] for t in covered if t in data.byte_pairs],
        script_costs=[data.script_costs.get(t, "") for t in covered],
        glued=[(data.glued[t], data.glued_context.get(t, "")) for t in covered if t in data.glued],
    )


@functools.cache
def _segments(encoding: str) -> Segments:
    """One per encoding, shared by the targets covering it: `fewest` caches by its runs."""
    data = load()
    runs, pure = data.letter_runs.get(encoding, ""), data.pure_runs.get(encoding, "")
    return Segments(runs, by_case=encoding == "o200k_base", pure=pure)


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
    "weak",
    "capitals",
    *SCRIPT_NAMES,
    *(f"unknown_len_{n}" for n in range(1, LENGTH_BINS + 1)),
    "unknown_len_more",
    "other_unknown_bytes",
    "other_unknown_cuts",
    *(f"other_unknown_len_{n}" for n in range(1, OTHER_LENGTH_BINS + 1)),
    "other_unknown_len_more",
    "constant",
)


def one_break(text: str) -> str:
    """`text` with each carriage return and line feed as a line feed alone: both encodings
    hold `\\r\\n` in one token wherever they hold `\\n` (as a line break alone, after symbols,
    in runs), so Windows text costs what the same text with Unix line breaks costs (the same
    count on half of the held-out chunks, at most 4% more on 99 in 100). Without it the
    classes took each `\\r\\n` for a blank line: such text was over-counted by 3-7 points more
    (median), past 10% on code and JSON."""
    return text.replace("\r\n", "\n") if "\r" in text else text


def features(text: str, vocab: Vocabulary) -> list[int]:
    """The feature vector of `text` (see the module docstring), aligned with FEATURE_NAMES."""
    text = one_break(text)
    data = text.encode("utf-8", "surrogatepass")
    ascii_only = len(data) == len(text)
    classes = data.translate(_CLASSES) if ascii_only else data.translate(_CLASSES, _CONTINUATION)
    row = [len(data), len(text)]
    row += map(classes.count, ASCII_PATTERNS)
    if ascii_only:
        row += _ZEROS
        cjk = rare = weak = capitals = 0
    else:
        for cls, group in OTHER_GROUPS:
            row += map(classes.count, group) if cls in classes else (0,) * len(group)
        wide = data.translate(None, _ASCII_BYTES)
        chars = wide.decode("utf-8", "surrogatepass")
        residue = vocab.singles.sub("", chars)
        weak = len(chars) - len(vocab.weak.sub("", chars))
        rare = len(residue)
        cjk = len(_CJK.findall(residue))
        capitals = wide.translate(_CAPITALS).count(b"DU")
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
    row += (sum(map(len, unknown)), cjk, rare, weak, capitals)
    row += _SCRIPT_ZEROS if ascii_only else scripts
    row += [lengths.get(n, 0) for n in range(1, LENGTH_BINS + 1)]
    row.append(len(unknown) - sum(row[-LENGTH_BINS:]))
    if other:
        lengths = Counter(map(len, other))
        row.append(sum(map(len, other)))
        row.append(cuts(other, vocab.held))
        row += [lengths.get(n, 0) for n in range(1, OTHER_LENGTH_BINS + 1)]
        row.append(len(other) - sum(row[-OTHER_LENGTH_BINS:]))
    else:
        row += _OTHER_ZEROS
    row.append(1)
    return row
