"""Snippets for tight budgets: fair shares of a budget, and the lines that best match a query.

When a budget cannot hold every result whole, each gets a fair share (`fair_shares`: max-min
fairness, a result smaller than its share keeps all of it and the rest goes to the others),
and a result larger than its share keeps its window of lines that mentions the query's words
most (`best_window`), instead of being dropped with every result after it.
"""

from __future__ import annotations

import re

__all__ = ["best_window", "fair_shares", "query_words"]

_STOP = frozenset([
    "the", "and", "for", "with", "from", "that", "this", "into", "over", "when", "what",
    "which", "how", "can", "does", "not", "all", "any", "each", "their", "there", "then",
    "than", "are", "its", "was", "has", "have", "been", "will", "way", "one",
])  # fmt: skip


def query_words(query: str | None) -> list[str]:
    """The query's lowercase words worth matching (3+ letters, not stop words), each cut to a
    five-letter stem so that "cookies" matches "cookie".

        >>> query_words("Parse the cookies header")
        ['cooki', 'heade', 'parse']
    """
    words = re.findall(r"[a-z0-9]+", (query or "").lower())
    return sorted({w[:5] for w in words if len(w) > 2 and w not in _STOP})


def fair_shares(costs: list[int], room: int) -> list[int]:
    """Max-min fair shares of `room` tokens among results costing `costs`: each result gets
    `min(its cost, an equal share of what the smaller ones left)`; shares sum to at most `room`.

        >>> fair_shares([10, 100, 100], 90)
        [10, 40, 40]
    """
    shares = [0] * len(costs)
    for pos, i in enumerate(sorted(range(len(costs)), key=costs.__getitem__)):
        shares[i] = max(0, min(costs[i], room // (len(costs) - pos)))
        room -= shares[i]
    return shares


_CONTEXT_LINES = 2


def best_window(text: str, words: list[str], chars: int) -> int:
    """Where (a line start in `text`) to start showing `chars` characters that mention `words`
    most: the earliest window of whole lines at most `chars` long with the most mentions, from
    its first matching line less two lines of context, moved back while the rest of the text
    from there still fits in `chars`; 0 when no line mentions a word.

        >>> best_window("a\\nb\\nc\\nd\\ncookie jar\\ne", ["cooki"], 15)
        4
    """
    lines = text.split("\n")
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line) + 1)
    scores = [sum(w in line.lower() for w in words) for line in lines]
    best, first, window, j = 0, 0, 0, 0
    for i in range(len(lines)):
        if j <= i:
            j, window = i + 1, scores[i]
        while j < len(lines) and starts[j + 1] - starts[i] <= chars:
            window += scores[j]
            j += 1
        if window > best:
            best, first = window, i
        window -= scores[i]
    if best:  # the window from its first matching line, with a little context above it
        while scores[first] == 0:
            first += 1
        first = max(0, first - _CONTEXT_LINES)
    while first > 0 and len(text) - starts[first - 1] <= chars:
        first -= 1
    return starts[first]
