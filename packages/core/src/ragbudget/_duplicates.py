"""Near-duplicate texts: Jaccard similarity of word shingles, and `dedupe` in rank order.

`dedupe` compares each text only with the kept texts that can reach the threshold: those that
share a shingle with it among the first few of each in one order, their own first (prefix
filtering: two sets with Jaccard similarity at least t share one of the first
`|s| - ceil(t|s|) + 1` elements of each, Chaudhuri et al., "A primitive operator for
similarity joins", 2006). The answer is the one comparing with every kept text gives, at a
fraction of the comparisons.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

from ragbudget.models import Chunk

__all__ = ["dedupe", "similarity"]

_WORD = re.compile(r"[A-Za-z0-9_]+|[^\sA-Za-z0-9_]")

Shingles = frozenset[tuple[str, ...]]


def _shingles(text: str, size: int) -> Shingles:
    words = _WORD.findall(text.lower())
    if len(words) <= size:
        return frozenset([tuple(words)])
    return frozenset(zip(*(words[i:] for i in range(size)), strict=False))


def similarity(a: str, b: str, *, shingle: int = 3) -> float:
    """Jaccard similarity of the word `shingle`-grams of `a` and `b`: 1.0 for the same words in
    the same order (whitespace and case aside), 0.0 for nothing in common.

        >>> from ragbudget.evidence import similarity
        >>> similarity("a b c d", "a b c d")
        1.0
    """
    return _jaccard(_shingles(a, shingle), _shingles(b, shingle))


def _jaccard(a: frozenset[Any], b: frozenset[Any]) -> float:
    return len(a & b) / len(a | b) if a | b else 1.0


def _near(a: frozenset[Any], b: frozenset[Any], threshold: float) -> bool:
    """`_jaccard(a, b) >= threshold`, without the set operations when the sizes alone rule it
    out (the similarity is at most the smaller size over the larger)."""
    small, large = sorted((len(a), len(b)))
    if small < threshold * large:
        return False
    return _jaccard(a, b) >= threshold


def _prefixes(sets: list[Shingles], threshold: float) -> list[list[tuple[str, ...]]]:
    """Each set's prefix (its first `|s| - ceil(threshold * |s|) + 1` shingles, and one more
    against rounding) in one order for all: the shingles found in that set alone first, then
    the others by hash and value.

    Any two sets at least `threshold` similar share a shingle of their prefixes, and a shingle
    found in one set only is shared by none: so only the part of a prefix found in other sets
    is returned (most texts have more shingles of their own than a prefix holds: none)."""
    once: set[tuple[str, ...]] = set()
    common: set[tuple[str, ...]] = set()
    for shingles in sets:
        common |= shingles & once
        once |= shingles
    out: list[list[tuple[str, ...]]] = []
    for shingles in sets:
        need = max(0, math.floor(threshold * len(shingles)) - 1)  # at most the overlap needed
        size = len(shingles) - need + 1
        shared = shingles & common
        own = len(shingles) - len(shared)  # the set's own shingles come first
        out.append(sorted(shared, key=_order)[: size - own] if own < size else [])
    return out


def _order(item: tuple[str, ...]) -> tuple[int, tuple[str, ...]]:
    return hash(item), item  # the item breaks a tie of hashes


def dedupe(
    chunks: Sequence[Chunk], *, threshold: float = 0.9, shingle: int = 3
) -> tuple[list[Chunk], dict[str, str]]:
    """`chunks` (rank order) without exact and near-duplicate texts, and `{left-out id: the id
    of the better-ranked chunk it repeats}`. Near means `similarity >= threshold`; a text
    repeats the best-ranked kept text it is near."""
    if not 0.0 < threshold <= 1.0:
        msg = f"threshold must be in (0, 1], got {threshold}"
        raise ValueError(msg)
    kept: list[tuple[Chunk, str, Shingles]] = []
    index: dict[tuple[str, ...], list[int]] = {}  # a kept set's prefix shingle -> kept places
    gone: dict[str, str] = {}
    sets = [_shingles(chunk.text, shingle) for chunk in chunks]
    for chunk, sh, first in zip(chunks, sets, _prefixes(sets, threshold), strict=True):
        norm = " ".join(chunk.text.split())
        # The same normalised text has the same shingles: it is among the candidates too.
        candidates = sorted({at for item in first for at in index.get(item, ())})
        twin = next(
            (kept[at][0].id for at in candidates
             if kept[at][1] == norm or _near(sh, kept[at][2], threshold)),
            None,
        )  # fmt: skip
        if twin is None:
            for item in first:
                index.setdefault(item, []).append(len(kept))
            kept.append((chunk, norm, sh))
        else:
            gone[chunk.id] = twin
    return [k for k, _, _ in kept], gone
