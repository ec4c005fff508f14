"""The fast evidence paths answer as the straightforward ones do.

`dedupe` compares a text only with the kept texts its prefix filter names; here it is checked
against the plain definition (each text against every kept text, in rank order) on texts built
to be near: copies with a few words changed, added or dropped, so that pairs fall on both sides
of the threshold. `select` counts a candidate's rendering only when the budget reads it: on a
long ranking it counts about as many as the budget reaches, not one per rank.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ragbudget import Chunk, get_counter
from ragbudget.evidence import dedupe, select, similarity

VOCAB = [f"w{i}" for i in range(40)] + ["(", ")", ".", "self", "def", "\n"]
_WORD = re.compile(r"[A-Za-z0-9_]+|[^\sA-Za-z0-9_]")


def _plain_shingles(text: str, size: int = 3) -> frozenset[tuple[str, ...]]:
    words = _WORD.findall(text.lower())
    if len(words) <= size:
        return frozenset([tuple(words)])
    return frozenset(tuple(words[i : i + size]) for i in range(len(words) - size + 1))


def _plain_similarity(a: str, b: str) -> float:
    x, y = _plain_shingles(a), _plain_shingles(b)
    return len(x & y) / len(x | y) if x | y else 1.0


def _plain_dedupe(chunks: list[Chunk], threshold: float) -> tuple[list[str], dict[str, str]]:
    kept: list[Chunk] = []
    gone: dict[str, str] = {}
    for chunk in chunks:
        norm = " ".join(chunk.text.split())
        twin = next(
            (k.id for k in kept
             if " ".join(k.text.split()) == norm or _plain_similarity(chunk.text, k.text) >= threshold),
            None,
        )  # fmt: skip
        if twin is None:
            kept.append(chunk)
        else:
            gone[chunk.id] = twin
    return [k.id for k in kept], gone


@st.composite
def near_texts(draw: st.DrawFn) -> list[Chunk]:
    """Texts of 0 to 120 words, and copies of earlier ones with up to 12 edits."""
    texts: list[str] = []
    for _ in range(draw(st.integers(1, 14))):
        if texts and draw(st.booleans()):
            words = draw(st.sampled_from(texts)).split(" ")
            for _ in range(draw(st.integers(0, 12))):
                at = draw(st.integers(0, len(words)))
                kind = draw(st.sampled_from(["add", "drop", "swap"]))
                if kind == "add" or not words:
                    words.insert(at, draw(st.sampled_from(VOCAB)))
                elif kind == "drop":
                    words.pop(min(at, len(words) - 1))
                else:
                    words[min(at, len(words) - 1)] = draw(st.sampled_from(VOCAB))
            texts.append(" ".join(words))
        else:
            texts.append(" ".join(draw(st.lists(st.sampled_from(VOCAB), max_size=120))))
    return [Chunk(id=f"c{i}", text=t) for i, t in enumerate(texts)]


@pytest.mark.slow  # 300 examples against the every-pair reference: ~3 s of CPU
@settings(max_examples=300, deadline=None)
@given(chunks=near_texts(), threshold=st.sampled_from([0.9, 0.8, 0.5, 1.0, 0.3]))
def test_dedupe_answers_as_comparing_every_pair(chunks: list[Chunk], threshold: float) -> None:
    kept, gone = dedupe(chunks, threshold=threshold)
    assert ([c.id for c in kept], gone) == _plain_dedupe(chunks, threshold)


@settings(max_examples=200, deadline=None)
@given(chunks=near_texts())
def test_similarity_is_the_plain_jaccard_of_shingles(chunks: list[Chunk]) -> None:
    for a in chunks:
        assert similarity(a.text, chunks[0].text) == _plain_similarity(a.text, chunks[0].text)


class _Tally:
    """A counter that tallies what it counts."""

    def __init__(self) -> None:
        self.base = get_counter("chars:4")
        self.name, self.exact, self.calls = self.base.name, True, 0

    def count(self, text: str) -> int:
        self.calls += 1
        return self.base.count(text)


def test_select_counts_what_the_budget_reaches_not_every_rank() -> None:
    chunks = [
        Chunk(id=f"c{i}", text=" ".join(f"w{i}x{j}" for j in range(60)), score=1 - i / 1000)
        for i in range(300)
    ]
    tally = _Tally()
    got = select(chunks, 400, counter=tally, snippets=False)
    shown = len(got.chunks)
    assert 0 < shown < 20
    assert tally.calls < 4 * shown + 20  # a plain per-rank count would be 300 and more
    assert got.report.dropped_ids[0] == f"c{shown}"
