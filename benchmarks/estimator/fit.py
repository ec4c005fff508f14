"""Fit the estimator on the `fit` split and write `ragbudget/_estimate_data.py`.

1. Vocabulary: the VOCAB_WORDS most frequent words of the fit split (seen MIN_COUNT times or
   more, at most MAX_WORD_TOKENS tokens), each with its token count after a space in every
   encoding (the default target takes the larger), and the CJK characters that are single
   tokens in each encoding's vocabulary.
2. Weights per target (each encoding, and "max": the larger of both counts) by asymmetric least
   squares on relative error (an expectile fit: under-counts weigh ALPHA times more than
   over-counts), every family weighted equally.
3. A safety scale per target: the smallest factor that keeps the 1st percentile of the relative
   error of every family of the fit split at or above -MARGIN. Held-out figures come later.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from corpus import FAMILIES, Chunk
from ragbudget import _estimate

DATA_MODULE = Path(_estimate.__file__).with_name("_estimate_data.py")
VOCAB_WORDS = 32000
MIN_COUNT = 3
MAX_WORD_TOKENS = 6
ALPHA = 64.0
MARGIN = 0.085
ITERATIONS = 12


def _words(text: str) -> list[bytes]:
    data = text.encode("utf-8", "surrogatepass")
    return data.translate(_estimate._WORD_TABLE).split()


def build_vocabulary(
    chunks: Sequence[Chunk], encodings: dict[str, Any]
) -> tuple[list[str], dict[str, tuple[list[int], str]]]:
    """(frequent words, target -> (their token counts after a space, single-token CJK chars))."""
    freq: Counter[bytes] = Counter()
    for chunk in chunks:
        if chunk.split == "fit":
            freq.update(_words(chunk.text))
    words: list[str] = []
    tokens: dict[str, list[int]] = {target: [] for target in encodings}
    for raw, count in freq.most_common():
        if len(words) == VOCAB_WORDS or count < MIN_COUNT:
            break
        word = raw.decode("utf-8", errors="replace")
        if word.split() != [word] or "\ufffd" in word:
            continue
        counts = {t: len(enc.encode_ordinary(" " + word)) for t, enc in encodings.items()}
        if max(counts.values()) > MAX_WORD_TOKENS:
            continue
        words.append(word)
        for target, n in counts.items():
            tokens[target].append(n)
    out: dict[str, tuple[list[int], str]] = {}
    for target, enc in encodings.items():
        cjk = []
        for token in range(enc.n_vocab):
            try:
                text = enc.decode_single_token_bytes(token).decode("utf-8").strip()
            except (KeyError, UnicodeDecodeError):
                continue
            if len(text) == 1 and ord(text) >= 0x2E80:
                cjk.append(text)
        out[target] = (tokens[target], "".join(sorted(set(cjk))))
    # The default target ("max"): the larger count, and only what every encoding knows.
    cjk_common = set.intersection(*(set(chars) for _, chars in out.values()))
    out[_estimate.DEFAULT_TARGET] = (
        list(map(max, *tokens.values())),
        "".join(sorted(cjk_common)),
    )
    return words, out


def feature_matrix(chunks: Sequence[Chunk], vocab: _estimate.Vocabulary) -> np.ndarray:
    return np.array([_estimate.features(c.text, vocab) for c in chunks], dtype=float)


def fit_weights(x: np.ndarray, y: np.ndarray, families: np.ndarray, fit: np.ndarray) -> np.ndarray:
    """Expectile regression on relative error, families balanced, then the safety scale."""
    base = np.zeros(len(y))
    for family in FAMILIES:
        members = families == family
        if members.any():
            base[members] = 1.0 / (y[members] * np.sqrt(members.sum()))
    asym = np.ones(len(y))
    coef = np.zeros(x.shape[1])
    for _ in range(ITERATIONS):
        w = (base * np.sqrt(asym))[fit]
        coef = np.linalg.lstsq(x[fit] * w[:, None], y[fit] * w, rcond=None)[0]
        asym = np.where(x @ coef < y, ALPHA, 1.0)
    ratio = (x @ coef) / y
    scale = max(
        (1 - MARGIN) / np.quantile(ratio[fit & (families == f)], 0.01)
        for f in FAMILIES
        if (fit & (families == f)).any()
    )
    return coef * scale


def _wrap_string(value: str, indent: int, *, by_words: bool, width: int = 36) -> str:
    """A long string literal as implicitly concatenated lines of at most ~90 characters."""
    pad = " " * (indent + 4)
    pieces: list[str] = []
    if by_words:
        line = ""
        for word in value.split(" "):
            # UTF-8 length: wide (CJK) characters count double in the linter's line length
            if line and len((line + word).encode()) > 80:
                pieces.append(line)
                line = ""
            line += word + " "
        pieces.append(line.rstrip())
    else:
        pieces = [value[i : i + width] for i in range(0, len(value), width)]
    return "(\n" + "".join(f"{pad}{piece!r}\n" for piece in pieces) + " " * indent + ")"


def write_data_module(
    words: list[str],
    vocab: dict[str, tuple[list[int], str]],
    weights: dict[str, np.ndarray],
    path: Path = DATA_MODULE,
) -> None:
    lines = [
        '"""Calibrated data of the token estimate (`ragbudget._estimate`).',
        "",
        "Generated by `python benchmarks/estimator/calibrate.py --fit`; do not edit by hand.",
        '"""',
        "",
        "FEATURE_NAMES: tuple[str, ...] = (",
        *(f"    {name!r}," for name in _estimate.FEATURE_NAMES),
        ")",
        "",
        "WEIGHTS: dict[str, tuple[float, ...]] = {",
    ]
    for target, coef in weights.items():
        lines.append(f"    {target!r}: (")
        lines += [
            f"        {float(f'{v:.6g}')!r},  # {n!r}"
            for v, n in zip(coef, _estimate.FEATURE_NAMES, strict=True)
        ]
        lines.append("    ),")
    lines += [
        "}",
        "",
        "# The most frequent words of the calibration corpus, separated by single spaces.",
        f"WORDS = {_wrap_string(' '.join(words), 0, by_words=True)}",
        "",
        "# Per encoding: each word's token count after a space, one digit per word.",
        "TOKENS: dict[str, str] = {",
    ]
    for target in _estimate.TARGETS:
        digits = "".join(map(str, vocab[target][0]))
        lines.append(f"    {target!r}: {_wrap_string(digits, 4, by_words=False, width=80)},")
    lines += ["}", "", "CJK: dict[str, str] = {"]
    for target, (_, cjk) in vocab.items():
        lines.append(f"    {target!r}: {_wrap_string(cjk, 4, by_words=False)},")
    lines += ["}", ""]
    path.write_text("\n".join(lines), encoding="utf-8")
