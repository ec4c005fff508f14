"""The budget primitive against brute force: the same answers, found with fewer counts."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from ragbudget import Chunk, TokenCounter, fit, get_counter
from ragbudget.fitting import (
    MIN_KEEP,
    boundaries,
    cut_text,
    largest_prefix,
    least_budget,
    stated_count,
    whole_fits,
)

WORDS = get_counter(lambda text: len(text.split()))  # monotone in prefix length
CHARS = get_counter("chars:1")


def _brute_prefix(render: Callable[[int], str], upper: int, limit: int, tc: TokenCounter) -> int:
    fitting = [k for k in range(upper + 1) if tc.count(render(k)) <= limit]
    return max(fitting) if fitting else -1


texts = st.lists(st.text(min_size=0, max_size=30), max_size=25)


@settings(max_examples=200, deadline=None)
@given(items=texts, sep=st.sampled_from(["", "\n\n", " ", "🙂"]), limit=st.integers(0, 120))
@example(items=["a"], sep="", limit=0)
def test_largest_prefix_is_the_brute_force_answer(items: list[str], sep: str, limit: int) -> None:
    def render(k: int) -> str:
        return "<" + sep.join(items[:k]) + ">"

    for tc in (WORDS, CHARS):
        fitted = largest_prefix(render, len(items), limit, tc)
        expected = _brute_prefix(render, len(items), limit, tc)
        if expected < 0:
            assert fitted is None
            continue
        assert fitted is not None
        assert fitted.size == expected
        assert fitted.text == render(expected)
        assert fitted.tokens == tc.count(fitted.text) <= limit


@settings(max_examples=100, deadline=None)
@given(items=texts, limit=st.integers(0, 200), guess=st.integers(0, 25))
def test_largest_prefix_answer_does_not_depend_on_the_guess(
    items: list[str], limit: int, guess: int
) -> None:
    def render(k: int) -> str:
        return "\n".join(items[:k])

    a = largest_prefix(render, len(items), limit, CHARS)
    b = largest_prefix(render, len(items), limit, CHARS, guess=guess)
    assert (a.size if a else None) == (b.size if b else None)


def test_largest_prefix_counts_only_near_the_answer() -> None:
    counted: list[int] = []
    items = ["word"] * 10_000

    def render(k: int) -> str:
        counted.append(k)
        return " ".join(items[:k])

    fitted = largest_prefix(render, len(items), 500, WORDS, guess=498)
    assert fitted is not None and fitted.size == 500
    assert len(counted) <= 6
    # a guess just over the answer costs two counts (it, then one less), not a bisection
    counted.clear()
    fitted = largest_prefix(render, len(items), 500, WORDS, guess=501)
    assert fitted is not None and fitted.size == 500
    assert counted == [501, 500]
    counted.clear()  # far over: galloping down, still near the answer, never from the bottom
    fitted = largest_prefix(render, len(items), 500, WORDS, lower=1, guess=600)
    assert fitted is not None and fitted.size == 500
    assert len(counted) <= 16 and min(counted) >= 400


prose = st.lists(
    st.sampled_from(["alpha", "beta.", "gamma!", "\n", "\n\n", " ", "delta?", "é", "中文"]),
    max_size=80,
).map("".join)


@settings(max_examples=300, deadline=None)
@given(text=prose, limit=st.integers(0, 200), marker=st.sampled_from(["", " [cut]"]))
@example(text="One. Two three. Four five six.", limit=18, marker="")
@example(text="alpha" * 21 + "\nalpha", limit=101, marker="")  # a boundary just past the cut
def test_cut_text_is_the_best_cut_point(text: str, limit: int, marker: str) -> None:
    def render(part: str) -> str:
        return part + marker

    fitted = cut_text(text, limit, CHARS, render=render)
    whole = [n for n in range(len(text) + 1) if CHARS.count(render(text[:n])) <= limit]
    if not whole:
        assert fitted is None
        return
    assert fitted is not None
    assert fitted.tokens == CHARS.count(fitted.text) <= limit
    assert fitted.text == render(text[: fitted.size])
    best = max(whole)
    if best == len(text):
        assert fitted.size == len(text)
        return
    # Brute force over cut points: the preferred kind's boundaries that keep enough, else
    # every character; the answer is the largest that fits.
    points = boundaries(text, best)
    if not points or points[-1] <= int(best * MIN_KEEP):
        points = list(range(best + 1))
    assert fitted.size == max(p for p in points if p <= best)

    plain = cut_text(text, limit, CHARS, render=render, at_boundary=False)
    assert plain is not None and plain.size == best


def test_cut_text_prefers_paragraphs_then_sentences() -> None:
    text = "First paragraph here.\n\nSecond one. It goes on and on and on."
    fitted = cut_text(text, 30, CHARS)
    assert fitted is not None and text[: fitted.size] == "First paragraph here.\n\n"
    fitted = cut_text(text, 40, CHARS)  # the paragraph would keep under 70% of 40
    assert fitted is not None and text[: fitted.size] == "First paragraph here.\n\nSecond one."


def test_cut_text_of_a_long_text_counts_only_near_the_cut() -> None:
    # `more` pages through a long line by cutting what is left again and again: counting all
    # that was left each time made paging through it quadratic.
    counted: list[int] = []

    def count(part: str) -> int:
        counted.append(len(part))
        return len(part.split())

    text = " ".join(f"word{i}." for i in range(60_000))
    fitted = cut_text(text, 1000, get_counter(count))
    assert fitted is not None and fitted.tokens == 1000 and text.startswith(fitted.text)
    assert max(counted) <= 2 * 8 * 1001 < len(text) // 40  # two probes, then near the cut
    counted.clear()  # the check before the cut (the middleware's pages make it too)
    assert not whole_fits(text, 1000, get_counter(count))
    assert counted == [8 * 1001, 16 * 1001]  # prefixes of 8, then 16 characters a token
    # a text over the probe that still fits is counted whole, and kept whole
    spaced = "x" + " " * 20_000 + "y"
    kept = cut_text(spaced, 100, get_counter(count))
    assert kept is not None and kept.text == spaced and kept.tokens == 2


@settings(max_examples=200, deadline=None)
@given(text=st.text(max_size=400), limit=st.integers(0, 60))
def test_whole_fits_is_the_count_against_the_budget(text: str, limit: int) -> None:
    assert whole_fits(text, limit, WORDS) == (WORDS.count(text) <= limit)
    assert whole_fits(text, limit, CHARS) == (len(text) <= limit)


def test_whole_fits_names_a_bad_budget() -> None:
    with pytest.raises((TypeError, ValueError), match="max_tokens"):
        whole_fits("abc", -1, CHARS)


def test_least_budget_reaches_a_fixed_point() -> None:
    def size_at(budget: int) -> int:  # the budget is written into the rendering
        return 10 + len(f"{budget:,}")

    n = least_budget(size_at(1), size_at)
    assert size_at(n) <= n


@given(words=st.integers(min_value=0, max_value=5000), start=st.integers(0, 10**6))
def test_stated_count_writes_the_count_of_its_own_text(words: int, start: int) -> None:
    def size_at(n: int) -> int:  # a notice that states its own length
        return len(f"{'x' * words} [this notice is {n:,} characters long]")

    n, size = stated_count(size_at, start)
    assert size == size_at(n) == n


def test_stated_count_stops_when_rounds_run_out() -> None:
    calls: list[int] = []

    def alternating(n: int) -> int:  # a count that never settles: 10 -> 11 -> 10 ...
        calls.append(n)
        return 21 - n

    n, size = stated_count(alternating, 10, rounds=3)
    assert len(calls) == 4 and size == alternating(n) != n  # both measured; they differ
    with pytest.raises(ValueError, match="start"):
        stated_count(alternating, -1)
    # holds: a budget that holds its own rendering is enough (a smaller count stops it)
    assert stated_count(lambda n: 5, 9, holds=True) == (9, 5)


@pytest.mark.parametrize("bad", [-1, 1.5, True])
def test_bad_budgets_name_the_argument(bad: object) -> None:
    with pytest.raises((TypeError, ValueError), match="max_tokens"):
        largest_prefix(str, 3, bad, CHARS)  # type: ignore[arg-type]
    with pytest.raises((TypeError, ValueError), match="max_tokens"):
        cut_text("abc", bad, CHARS)  # type: ignore[arg-type]


@settings(max_examples=200, deadline=None)
@given(
    texts=st.lists(st.text(min_size=1, max_size=40), min_size=1, max_size=12),
    sep=st.sampled_from(["\n\n", "🙂🙂", " | "]),
    limit=st.integers(0, 120),
    strategy=st.sampled_from(["stop", "fill"]),
    order=st.sampled_from(["score", "original"]),
)
def test_fit_with_a_separator_bounds_the_joined_text(
    texts: list[str], sep: str, limit: int, strategy: str, order: str
) -> None:
    tc = get_counter("estimate:cl100k_base")
    chunks = [Chunk(id=str(i), text=t, score=float(-i % 5)) for i, t in enumerate(texts)]
    result = fit(chunks, limit, counter=tc, separator=sep, strategy=strategy, order=order)  # type: ignore[arg-type]
    joined = sep.join(c.text for c in result.chunks)
    assert tc.count(joined) <= limit
    if len(result.chunks) > 1:
        assert result.info.used_tokens == tc.count(joined)
    kept = {c.id for c in result.chunks}
    assert kept.isdisjoint(result.info.dropped_ids)
    assert kept | set(result.info.dropped_ids) == {c.id for c in chunks}
