"""The hashing embedding's arithmetic: text to a vector of hashed word features.

Identifier-aware unigrams and bigrams, a light stemmer, sublinear term frequency, L2-normalised
(`ragbudget_server.store.embedding.HashingEmbedding` is the Chroma embedding function built on
it). Kept apart from Chroma so that a process that only embeds (the ingest's planning helper,
`ragbudget_server.store.planner`) need not import Chroma; the same text gives the same float32
vector, bit for bit, in every process.
"""

from __future__ import annotations

import re
import zlib
from collections import Counter
from functools import lru_cache
from itertools import pairwise
from typing import Any

import numpy as np

__all__ = ["embed_text", "features"]

_IDENT = re.compile(r"[^\W\d_][\w]*|\d+", re.UNICODE)
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
_STOP = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "been",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "doing",
        "for",
        "from",
        "had",
        "has",
        "have",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "may",
        "might",
        "must",
        "no",
        "not",
        "of",
        "on",
        "or",
        "our",
        "should",
        "so",
        "such",
        "than",
        "that",
        "the",
        "their",
        "them",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "to",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
        "self",
        "cls",
        "def",
        "return",
        "none",
        "true",
        "false",
        "import",
        "elif",
        "else",
        "pass",
        "lambda",
        "yield",
        "class",
    ]
)


def _stem(word: str) -> str:
    """A light suffix strip so 'decoding', 'decoded', 'decodes' and 'decode' meet."""
    n = len(word)
    if n > 5 and word.endswith("ing"):
        word = word[:-3]
    elif (n > 4 and word.endswith(("ed", "es"))) or (n > 5 and word.endswith("er")):
        word = word[:-2]
    elif n > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    if len(word) > 4 and word.endswith("e"):
        word = word[:-1]
    return word


@lru_cache(maxsize=1 << 16)
def _words(ident: str) -> tuple[tuple[str, ...], str | None]:
    """An identifier's stemmed words (stop words out), and the whole identifier when it has
    several ('JSONDecodeError' -> ('json', 'decod', 'error'), '=jsondecodeerror')."""
    if ident.isascii() and not ident.isdigit():
        parts = [p.lower() for p in _CAMEL.findall(ident)]
    else:
        parts = [ident.lower()]
    words = tuple(_stem(p) for p in parts if len(p) > 1 and p not in _STOP)
    return words, ("=" + ident.lower() if len(words) > 1 else None)


def features(text: str) -> Counter[str]:
    """The features of `text`: word parts, whole identifiers, and bigrams of adjacent words."""
    words: list[str] = []
    wholes: list[str] = []
    for ident in _IDENT.findall(text):
        parts, whole = _words(ident)
        words.extend(parts)
        if whole is not None:
            wholes.append(whole)
    counts = Counter(words)
    counts.update(wholes)
    counts.update(f"{a} {b}" for a, b in pairwise(words) if a != b)
    return counts


@lru_cache(maxsize=1 << 18)
def _slot(feature: str, dim: int) -> tuple[int, float]:
    """Where a feature lands in the vector, and with which sign (bigrams weigh less)."""
    h = zlib.crc32(feature.encode("utf-8"))
    weight = 0.6 if " " in feature else 1.0
    return h % dim, weight if (h >> 16) & 1 else -weight


def embed_text(text: str, dim: int) -> np.ndarray[Any, np.dtype[np.float32]]:
    """The unit vector of `text`'s features in `dim` dimensions (a fixed direction when it has
    no words, or when every feature cancels out, so that cosine stays defined)."""
    counts = features(text)
    if not counts:
        vector = np.zeros(dim, dtype=np.float32)
        vector[0] = 1.0
        return vector
    slots = [_slot(f, dim) for f in counts]
    index = np.fromiter((i for i, _ in slots), dtype=np.int64, count=len(slots))
    signed = np.fromiter((w for _, w in slots), dtype=np.float64, count=len(slots))
    tf = np.fromiter(counts.values(), dtype=np.float64, count=len(slots))
    summed = np.bincount(index, weights=signed * (1.0 + np.log(tf)), minlength=dim)
    norm = float(np.linalg.norm(summed))
    if norm == 0.0:
        summed[0], norm = 1.0, 1.0
    return (summed / norm).astype(np.float32)
