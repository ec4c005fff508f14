"""Where the estimate's time goes, stage by stage, beside tiktoken (docs/estimator.md, Speed).

    python tools/estimator/stages.py                 # the natural families, 300 chunks each
    python tools/estimator/stages.py code json --chunks 500
    python tools/estimator/stages.py --floor         # what the floor does for the tails
    python tools/estimator/stages.py --grams --chunks 2000   # accuracy with fewer n-grams

Each stage is timed alone on the held-out chunks of a family (inputs prepared beforehand,
best of 5 rounds, the word cache emptied before each round), in microseconds per 1,000
characters; the whole estimate and tiktoken's `encode_ordinary` are timed the same way. The
stages overlap the estimate only roughly (it skips some passes where a bound shows they cannot
change the count), so they need not add up to it exactly. The model skeleton is what any
estimate on this model must do at least (encode, classes, split, look the words up, count the
class n-grams, sum; no floor, no price of unknown words, nothing for non-ASCII text), timed as
one function beside the goal of 1.5x tiktoken's speed.

`--grams` prints what the class n-gram counts are worth (why fewer passes cost accuracy): on
the ASCII natural families, the held-out median |error| and 99th-percentile under-count of a
plain least-squares fit of the default's features to the larger of the two counts (fit split,
no safety scale, no floor), with all 19 class n-grams, with those the floor reads too
(`FLOOR_GRAMS`), and with none.

`--floor` prints instead what the floor is worth: the 99th-percentile under-count against
cl100k of the default estimate with and without it (the linear model alone, rounded up and
clamped to the bytes) on the held-out chunks of every family (the first 400 of each), the
share of chunks where the floor exceeds the model, and the share where bounds from counts
alone (`floor_bound`) prove it does not: all an exact gate could skip.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable, Sequence
from itertools import repeat
from operator import mul
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import corpus  # noqa: E402
import families  # noqa: E402
import report  # noqa: E402
import tiktoken  # noqa: E402
from ragbudget import use_bundled_tiktoken_files  # noqa: E402
from ragbudget.estimate import _data as _estimate_data  # noqa: E402
from ragbudget.estimate import _floor as _estimate_floor  # noqa: E402
from ragbudget.estimate import _model as _estimate  # noqa: E402
from ragbudget.estimate import _pieces as _estimate_pieces  # noqa: E402
from ragbudget.estimate import _segments as _estimate_segments  # noqa: E402
from ragbudget.estimate._text import _CLASSES, _CONTINUATION, _WORD_TABLE  # noqa: E402

# the class n-grams the estimate hands text_tokens and text_bound (the estimate's own lists)
TEXT_COUNTS = tuple(_estimate.ASCII_PATTERNS[i] for i in _estimate._TEXT_COUNTS)
TEXT_BOUND = tuple(_estimate.ASCII_PATTERNS[i] for i in _estimate._TEXT_BOUND)


def _best(stage: Callable[[Any], object], inputs: Sequence[Any], chars: int) -> float:
    """Microseconds per 1,000 characters, best of 5 rounds (`report.throughputs`)."""
    (speed,) = report.throughputs(
        {"stage": stage}, inputs, reset=_estimate.clear_caches, chars=chars
    )
    return 1e3 / speed


def stages(texts: Sequence[str], o200k: Any) -> dict[str, float]:
    vocab = _estimate.vocabulary(_estimate.DEFAULT_TARGET)
    table = vocab.words
    datas = [t.encode("utf-8", "surrogatepass") for t in texts]
    classes = [d.translate(_CLASSES, _CONTINUATION) for d in datas]
    words = [d.translate(_WORD_TABLE).split() for d in datas]
    unknown = [[w for w in ws if w not in table] for ws in words]
    ascii_words = [[w for w in ws if w.isascii()] for ws in unknown]
    other_words = [[w for w in ws if not w.isascii()] for ws in unknown]
    counts = [tuple(map(c.count, TEXT_COUNTS)) for c in classes]
    chars = sum(map(len, texts))
    tiktoken_time = _best(o200k.encode_ordinary, texts, chars)
    return {
        "tiktoken o200k_base": tiktoken_time,
        "the goal (tiktoken / 1.5)": tiktoken_time / 1.5,
        "estimate (default)": _best(_estimate.estimate_tokens, texts, chars),
        "model skeleton": _best(lambda t: skeleton(t, table), texts, chars),
        "encode, classes, split": _best(
            lambda t: t.encode().translate(_CLASSES).translate(_WORD_TABLE).split(), texts, chars
        ),
        "vocabulary lookups": _best(lambda ws: list(map(table.get, ws, repeat(0))), words, chars),
        "class n-gram counts": _best(
            lambda c: list(map(c.count, _estimate.ASCII_PATTERNS)), classes, chars
        ),
        "floor: unknown ASCII words": _best(
            lambda ws: _estimate_floor.word_tokens(ws, vocab), ascii_words, chars
        ),
        "floor: digits, symbols, gaps, lines": _best(
            lambda pair: _estimate_pieces.text_tokens(
                pair[0], vocab.symbol_runs, pair[1], vocab.space_runs, vocab.space_counts
            ),
            list(zip(datas, counts, strict=True)),
            chars,
        ),
        "floor: unknown non-ASCII words": _best(
            lambda ws: _estimate_floor.other_tokens(ws, vocab), other_words, chars
        ),
    }


def skeleton(text: str, table: dict[bytes, int]) -> float:
    """The least any estimate built on this model does, with no floor, no price of unknown
    words and nothing for non-ASCII text: encode, classes, split into words, one lookup per
    word, the class n-gram counts, and their sums."""
    data = text.encode("utf-8", "surrogatepass")
    classes = data.translate(_CLASSES, _CONTINUATION)
    words = data.translate(_WORD_TABLE).split()
    known = sum(map(table.get, words, repeat(0)))
    return len(data) + known + sum(map(classes.count, _estimate.ASCII_PATTERNS))


def floor_bound(text: str, vocab: _estimate.Vocabulary) -> int:
    """An upper bound of `floor_tokens` from counts alone, the most an exact gate could use:
    every unknown ASCII word priced as random letters (1 + 0.55 per letter after the first,
    0.6 in capitals, plus its case changes of both kinds: never less than the floor's price
    of it, in random case too), and a short word in capitals 1 more per rare pair (the floor
    prices it 1 plus its rare pairs, however many, unless they make it random capitals), or
    their spelling's bound where the floor spells them (`spelling_bound`),
    every symbol and line break a token (`text_bound`); known and non-ASCII words as the floor
    prices them (at a line's start too)."""
    data, classes, known, unknown, other, words = _estimate_floor.floor_parts(text, vocab)
    known += _estimate_floor.bare_tokens(data, vocab)  # words at a line's start, as priced
    capitals = [w for w in unknown if w.isupper()]
    pairs = sum(map(len, unknown)) - len(unknown)
    caps_pairs = sum(map(len, capitals)) - len(capitals)
    changes = _estimate_floor.case_changes(b" ".join(unknown))
    long = sum(len(w) >= _estimate_floor._LONG for w in unknown)
    caps = b" ".join(w for w in capitals if len(w) < _estimate_floor._LONG)
    rare_caps = len(vocab.rare_pairs.findall(caps.lower()))
    letters = math.ceil(_estimate_floor._PER_LETTER * (pairs - caps_pairs))
    letters += math.ceil(_estimate_floor._PER_CAPITAL * caps_pairs)
    words_bound = len(unknown) + letters + long + changes + rare_caps
    if _estimate_segments.spelled(len(unknown), words):  # their spelling, if more (of them all)
        words_bound = max(words_bound, _estimate_segments.spelling_bound(unknown, vocab))
    text_bound = _estimate_pieces.text_bound(*map(classes.count, TEXT_BOUND))
    text_bound += _estimate_pieces.gap_bound(*map(classes.count, (b"  ", b" 0", b"\t")))
    pieces = words_bound + _estimate_floor.other_tokens(other, vocab)
    pieces = max(pieces, _estimate_floor.foreign_tokens(unknown, other, words, vocab))
    forced = known + pieces + text_bound
    return max(forced, _estimate_floor.solid_floor(classes))


def floor_worth(chunks: Sequence[corpus.Chunk], cl100k: Any) -> str:
    """Per family: 99th-percentile under-count with the floor / without (the model alone);
    the share of chunks where the floor exceeds the model, and where `floor_bound` proves it
    does not (where an exact gate could skip it)."""
    target = _estimate.DEFAULT_TARGET
    weights = _estimate_data.load().weights[target]
    vocab = _estimate.vocabulary(target)
    lines = [
        "| family | with the floor | the linear model alone | floor above the model "
        "| bounds prove it below |",
        "|---|---|---|---|---|",
    ]
    for family in (*corpus.FAMILIES, *families.FAMILIES):
        texts = [c.text for c in chunks if c.family == family and c.split == "test"][:400]
        if not texts:
            continue
        with_floor, alone = [], []
        above = proved = 0
        for text in texts:
            truth = len(cl100k.encode_ordinary(text))
            size = len(text.encode("utf-8", "surrogatepass"))
            linear = sum(map(mul, _estimate.features(text, vocab), weights))
            model = min(max(1, math.ceil(linear)), size)
            with_floor.append(_estimate.estimate_tokens(text) / truth - 1)
            alone.append(model / truth - 1)
            above += _estimate.floor_tokens(text, vocab) > model
            proved += floor_bound(text, vocab) <= model
        cells = [f"{-100 * report.quantile(e, 0.01):.1f}%" for e in (with_floor, alone)]
        cells += [f"{100 * n / len(texts):.0f}%" for n in (above, proved)]
        lines.append(f"| {family} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


ASCII_NATURAL = ("code", "prose", "markdown", "json", "logs")
# the class n-grams the floor takes from the model's counts (`text_tokens`, `text_bound`)
FLOOR_GRAMS = frozenset(p.decode() for p in (*TEXT_COUNTS, *TEXT_BOUND))


def grams_worth(chunks: Sequence[corpus.Chunk], encs: Sequence[Any]) -> str:
    """Per ASCII natural family: held-out median |error| / 99th-percentile under-count of a
    least-squares fit (relative error, fit split) of `features` with all the class n-grams,
    with `FLOOR_GRAMS` only, and with none."""
    import numpy as np

    vocab = _estimate.vocabulary(_estimate.DEFAULT_TARGET)
    chosen = [c for c in chunks if c.family in ASCII_NATURAL]
    x = np.array([_estimate.features(c.text, vocab) for c in chosen], dtype=float)
    y = np.array([max(len(e.encode_ordinary(c.text)) for e in encs) for c in chosen], float)
    family = np.array([c.family for c in chosen])
    fit = np.array([c.split == "fit" for c in chosen])
    grams = {p.decode() for p in _estimate.ASCII_PATTERNS}
    names = _estimate.FEATURE_NAMES
    used = [i for i in range(len(names)) if x[:, i].any()]
    subsets = {
        "all 19 class n-grams": used,
        f"the floor's {len(FLOOR_GRAMS)}": [
            i for i in used if names[i] not in grams or names[i] in FLOOR_GRAMS
        ],
        "none": [i for i in used if names[i] not in grams],
    }
    lines = ["| family | " + " | ".join(subsets) + " |", "|---" * (len(subsets) + 1) + "|"]
    cells: dict[str, list[str]] = {f: [] for f in ASCII_NATURAL}
    for cols in subsets.values():
        scaled = x[:, cols] / y[:, None]
        coef, *_ = np.linalg.lstsq(scaled[fit], np.ones(int(fit.sum())), rcond=None)
        error = x[:, cols] @ coef / y - 1
        for f in ASCII_NATURAL:
            held = error[~fit & (family == f)]
            median = 100 * float(np.median(np.abs(held)))
            cells[f].append(f"{median:.1f}% / {-100 * float(np.quantile(held, 0.01)):.1f}%")
    lines += [f"| {f} | " + " | ".join(row) + " |" for f, row in cells.items()]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("families", nargs="*", default=list(corpus.FAMILIES))
    parser.add_argument("--chunks", type=int, default=300, help="held-out chunks per family")
    parser.add_argument("--floor", action="store_true", help="the tails with and without floor")
    parser.add_argument("--grams", action="store_true", help="accuracy with fewer class n-grams")
    args = parser.parse_args()
    use_bundled_tiktoken_files()
    o200k = tiktoken.get_encoding("o200k_base")
    chunks = corpus.build_corpus(args.chunks)
    if args.grams:
        print(grams_worth(chunks, (tiktoken.get_encoding("cl100k_base"), o200k)))
        return 0
    if args.floor:
        chunks += families.build(args.chunks)
        print(floor_worth(chunks, tiktoken.get_encoding("cl100k_base")))
        return 0
    rows = []
    for family in args.families:
        texts = [c.text for c in chunks if c.family == family and c.split == "test"]
        if texts:
            rows.append((family, stages(texts, o200k)))
    names = list(rows[0][1])
    print("| us per 1,000 chars | " + " | ".join(names) + " |")
    print("|" + "---|" * (len(names) + 1))
    for family, times in rows:
        print(f"| {family} | " + " | ".join(f"{times[n]:.0f}" for n in names) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
