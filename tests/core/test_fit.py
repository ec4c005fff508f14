"""fit(): every guarantee in the README, as properties and as worked examples."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ragbudget import CUT_MARKER, Chunk, TokenCounter, fit, get_counter

# ---------------------------------------------------------------------------------------------
# Generators

_text = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",)), min_size=0, max_size=400
) | st.sampled_from(
    [
        "",
        "word " * 300,
        "第一段。第二段！第三段？" * 40,
        "line one\nline two\n\nparagraph two. Sentence two.\n" * 30,
        "x" * 3000,
        "🙂 emoji chat 🎉 " * 80,
    ]
)
_score = (
    st.none() | st.floats(min_value=-5, max_value=5, allow_nan=False) | st.sampled_from([0.5, 1.0])
)


@st.composite
def chunk_lists(draw: st.DrawFn) -> list[Chunk]:
    texts = draw(st.lists(_text, max_size=12))
    return [
        Chunk(id=f"c{i}", text=t, score=draw(_score), metadata={"i": i})
        for i, t in enumerate(texts)
    ]


COUNTERS = {
    "estimate": get_counter("estimate"),
    "chars": get_counter("chars:4"),
    "words": get_counter(lambda s: len(s.split())),
}


@pytest.fixture(params=["estimate", "chars", "words", "tiktoken"])
def counter(request: pytest.FixtureRequest, cl100k: TokenCounter) -> TokenCounter:
    return cl100k if request.param == "tiktoken" else COUNTERS[request.param]


def _ranked_ids(chunks: list[Chunk]) -> list[str]:
    idx = sorted(
        range(len(chunks)), key=lambda i: (chunks[i].score is None, -(chunks[i].score or 0), i)
    )
    return [chunks[i].id for i in idx]


def _check(chunks: list[Chunk], result: Any, budget: int, tc: TokenCounter, **kw: Any) -> None:
    """Every stated guarantee of one fit() call."""
    strategy = kw.get("strategy", "stop")
    per_chunk = kw.get("max_tokens_per_chunk")
    limit = budget if per_chunk is None else min(budget, per_chunk)
    info = result.info
    by_id = {c.id: c for c in chunks}
    counts = [tc.count(c.text) for c in result.chunks]
    # The budget holds, and the report tells the truth about it.
    assert sum(counts) <= budget
    assert counts == result.tokens
    assert info.used_tokens == sum(counts)
    assert info.max_tokens == budget
    assert info.counter == tc.name
    assert info.exact == tc.exact
    kept = [c.id for c in result.chunks]
    assert len(set(kept)) == len(kept)
    assert info.original_count == len(chunks)
    assert info.returned_count == len(kept)
    assert set(kept).isdisjoint(info.dropped_ids)
    assert set(kept) | set(info.dropped_ids) == set(by_id)
    ranked = _ranked_ids(chunks)
    assert info.dropped_ids == [i for i in ranked if i in set(info.dropped_ids)]
    assert info.truncated == bool(info.dropped_ids or info.cut_ids)
    assert info.reason == (
        "token_budget" if info.dropped_ids else "chunk_cut" if info.cut_ids else None
    )
    # Nothing but an oversized chunk is ever split; a cut chunk is a marked prefix.
    assert set(info.cut_ids) <= set(kept)
    for chunk in result.chunks:
        original = by_id[chunk.id]
        assert chunk.metadata == original.metadata
        assert chunk.score == original.score
        if chunk.id in info.cut_ids:
            assert tc.count(original.text) > limit
            body, sep, _ = chunk.text.rpartition("\n[... cut to fit")
            assert sep or chunk.text.startswith("[... cut to fit")
            assert original.text.startswith(body)
            assert chunk.text.endswith(" tokens in full]")
        else:
            assert chunk.text == original.text
    # Ranks and order.
    assert result.ranks == [ranked.index(i) for i in kept]
    if kw.get("order", "score") == "score":
        assert result.ranks == sorted(result.ranks)
    else:
        assert kept == [c.id for c in chunks if c.id in set(kept)]
    # Which chunks were dropped for the budget, and why.
    if info.next_offset is None:  # nothing was left out for lack of budget: only oversized ones
        assert budget == 0 or all(tc.count(by_id[i].text) > limit for i in info.dropped_ids)
    else:
        first = info.next_offset
        assert ranked[first] in info.dropped_ids
        # every chunk ranked above the first one left out was kept or was oversized
        assert all(i in kept or tc.count(by_id[i].text) > limit for i in ranked[:first])
        if strategy == "stop":  # only the lowest-ranked are dropped
            assert all(r < first for r in result.ranks)
    if strategy == "fill" and budget:
        for i in info.dropped_ids:  # each one left out really could not be added any more
            if tc.count(by_id[i].text) <= limit:
                assert tc.count(by_id[i].text) > budget - info.used_tokens


# ---------------------------------------------------------------------------------------------
# Properties


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    chunks=chunk_lists(),
    budget=st.integers(min_value=0, max_value=1500),
    strategy=st.sampled_from(["stop", "fill"]),
    oversize=st.sampled_from(["truncate", "drop"]),
    per_chunk=st.none() | st.integers(min_value=1, max_value=600),
    order=st.sampled_from(["score", "original"]),
)
def test_fit_guarantees(
    counter: TokenCounter,
    chunks: list[Chunk],
    budget: int,
    strategy: str,
    oversize: str,
    per_chunk: int | None,
    order: str,
) -> None:
    before = [c.model_dump() for c in chunks]
    kw: dict[str, Any] = {
        "strategy": strategy,
        "oversize": oversize,
        "max_tokens_per_chunk": per_chunk,
        "order": order,
    }
    result = fit(chunks, budget, counter=counter, **kw)
    assert [c.model_dump() for c in chunks] == before  # input never mutated
    _check(chunks, result, budget, counter, **kw)
    if oversize == "drop":
        assert result.info.cut_ids == []


@settings(max_examples=40, deadline=None)
@given(chunks=chunk_lists(), budget=st.integers(min_value=1, max_value=800))
def test_truncate_keeps_an_oversized_top_chunk(chunks: list[Chunk], budget: int) -> None:
    tc = COUNTERS["estimate"]
    big = Chunk(id="bomb", text="A sentence of the bomb. " * 2000, score=99.0)
    result = fit([big, *chunks], budget, counter=tc)
    _check([big, *chunks], result, budget, tc)
    if tc.count(CUT_MARKER.format(limit=budget, total=tc.count(big.text))) <= budget - 10:
        assert result.chunks[0].id == "bomb"
        assert result.info.cut_ids == ["bomb"]


def test_zero_budget_returns_nothing() -> None:
    chunks = [Chunk(id="a", text="hello"), Chunk(id="b", text="")]
    result = fit(chunks, 0)
    assert result.chunks == []
    assert result.info.dropped_ids == ["a", "b"]
    assert result.info.truncated
    assert fit([], 0).info.truncated is False


def test_empty_input() -> None:
    result = fit([], 100)
    assert result.chunks == []
    assert result.info.model_dump()["truncated"] is False
    assert result.info.notice() is None


# ---------------------------------------------------------------------------------------------
# Worked examples


def test_ranking_ties_and_unscored_keep_input_order() -> None:
    chunks = [
        Chunk(id="n1", text="a"),
        Chunk(id="lo", text="a", score=0.1),
        Chunk(id="t1", text="a", score=0.5),
        Chunk(id="n2", text="a"),
        Chunk(id="t2", text="a", score=0.5),
        Chunk(id="hi", text="a", score=0.9),
    ]
    result = fit(chunks, 1000, counter="chars:1")
    assert [c.id for c in result.chunks] == ["hi", "t1", "t2", "lo", "n1", "n2"]
    unscored = [Chunk(id=str(i), text="x") for i in range(5)]
    assert [c.id for c in fit(unscored, 3, counter="chars:1").chunks] == ["0", "1", "2"]


def test_stop_drops_only_the_lowest_and_fill_packs(stdlib: Path, cl100k: TokenCounter) -> None:
    files = sorted((stdlib / "json").glob("*.py"))
    chunks = [Chunk(id=f.name, text=f.read_text(), score=1.0 - i / 10) for i, f in enumerate(files)]
    sizes = {c.id: cl100k.count(c.text) for c in chunks}
    budget = sizes["__init__.py"] + sizes["decoder.py"] + sizes["scanner.py"]
    assert sizes["encoder.py"] > sizes["scanner.py"]
    stop = fit(chunks, budget, counter=cl100k)
    assert [c.id for c in stop.chunks] == ["__init__.py", "decoder.py"]
    assert stop.info.dropped_ids == ["encoder.py", "scanner.py", "tool.py"]
    assert stop.info.next_offset == 2
    fill = fit(chunks, budget, counter=cl100k, strategy="fill")
    assert [c.id for c in fill.chunks] == ["__init__.py", "decoder.py", "scanner.py"]
    assert fill.info.used_tokens == budget
    original = fit(chunks, budget, counter=cl100k, strategy="fill", order="original")
    assert [c.id for c in original.chunks] == ["__init__.py", "decoder.py", "scanner.py"]


def test_notice_matches_the_documented_form() -> None:
    chunks = [Chunk(id=str(i), text="x" * 4096, score=1.0) for i in range(20)]
    info = fit(chunks, 8192, counter="chars:4").info
    assert (
        info.notice() == "[Showing 8 of 20 results (8,192-token budget). Use offset=8 to continue]"
    )
    assert info.notice(offset_hint="--offset {offset}") == (
        "[Showing 8 of 20 results (8,192-token budget). Use --offset 8 to continue]"
    )
    assert info.notice(offset_hint=None) == "[Showing 8 of 20 results (8,192-token budget)]"
    assert info.notice(offset=16, total=100) == (
        "[Showing 8 of 100 results (8,192-token budget). Use offset=24 to continue]"
    )


def test_cut_prefers_paragraph_then_sentence_then_line_then_word() -> None:
    tc = get_counter("chars:1")
    para = "First paragraph sentence one. Sentence two.\n\n" + "Second paragraph goes on. " * 20
    cut = fit([Chunk(id="p", text=para)], 112, counter=tc).chunks[0].text
    assert cut.startswith("First paragraph sentence one. Sentence two.\n[... cut to fit")
    sentences = "One sentence here. " * 40
    cut = fit([Chunk(id="s", text=sentences)], 150, counter=tc).chunks[0].text
    assert cut.split("\n[")[0].endswith("here.")
    words = "word " * 200
    cut = fit([Chunk(id="w", text=words)], 150, counter=tc).chunks[0].text
    assert cut.split("\n[")[0].endswith("word")
    chars = "x" * 1000
    cut = fit([Chunk(id="c", text=chars)], 150, counter=tc).chunks[0].text
    assert 148 <= len(cut) <= 150  # the cut lands within 1% of the limit
    assert cut.endswith("1,000 tokens in full]")


def test_context_bomb_is_cut_not_allowed_to_overflow(stdlib: Path, cl100k: TokenCounter) -> None:
    bomb = (stdlib / "pydoc_data" / "topics.py").read_text()
    assert cl100k.count(bomb) > 100_000
    small = [Chunk(id=f"s{i}", text=f"small chunk {i}. " * 20, score=0.5) for i in range(10)]
    result = fit(
        [Chunk(id="bomb", text=bomb, score=0.9), *small],
        8192,
        counter=cl100k,
        max_tokens_per_chunk=2000,
    )
    assert result.info.cut_ids == ["bomb"]
    assert result.tokens[0] <= 2000
    assert [c.id for c in result.chunks][:3] == ["bomb", "s0", "s1"]
    assert sum(result.tokens) <= 8192
    assert result.info.truncated and result.info.reason == "chunk_cut"
    dropped = fit(
        [Chunk(id="bomb", text=bomb, score=0.9), *small], 8192, counter=cl100k, oversize="drop"
    )
    assert dropped.info.dropped_ids == ["bomb"]
    assert dropped.info.next_offset is None
    assert len(dropped.chunks) == 10


def test_marker_alone_over_the_limit_drops_the_chunk() -> None:
    result = fit([Chunk(id="a", text="x" * 100)], 5, counter="chars:1")
    assert result.chunks == []
    assert result.info.dropped_ids == ["a"]


def test_accepts_mappings_and_copies_cut_chunks() -> None:
    src = {"id": "m", "text": "word " * 100, "score": 1.0, "metadata": {"k": [1]}}
    result = fit([src], 100, counter="chars:1")
    assert result.info.cut_ids == ["m"]
    assert result.chunks[0].metadata == {"k": [1]}
    assert src["text"] == "word " * 100


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"max_tokens": -1}, "max_tokens must be >= 0"),
        ({"max_tokens": 1.5}, "max_tokens must be an int"),
        ({"max_tokens": True}, "max_tokens must be an int"),
        ({"max_tokens": 10, "max_tokens_per_chunk": 0}, "max_tokens_per_chunk must be >= 1"),
        ({"max_tokens": 10, "strategy": "greedy"}, "strategy must be one of"),
        ({"max_tokens": 10, "oversize": "split"}, "oversize must be one of"),
        ({"max_tokens": 10, "order": "random"}, "order must be one of"),
    ],
)
def test_bad_arguments_name_the_argument(kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises((ValueError, TypeError), match=match):
        fit([Chunk(id="a", text="x")], **kwargs)


def test_bad_chunks() -> None:
    with pytest.raises(ValueError, match="repeats id 'a'"):
        fit([Chunk(id="a", text="x"), Chunk(id="a", text="y")], 10)
    with pytest.raises(TypeError, match=r"chunks\[0\] must be a Chunk"):
        fit(["text"], 10)  # type: ignore[list-item]
    with pytest.raises(TypeError, match="chunks must be an iterable of Chunk"):
        fit("text", 10)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="NaN"):
        Chunk(id="a", text="x", score=float("nan"))
    with pytest.raises(ValueError, match="extra"):
        Chunk(id="a", text="x", tokens=3)  # type: ignore[call-arg]


def test_logging_is_debug_only(caplog: pytest.LogCaptureFixture) -> None:
    """Truncation is fit's normal outcome: one DEBUG line (its summary), nothing above DEBUG."""
    caplog.set_level(logging.DEBUG, logger="ragbudget")
    result = fit(
        [Chunk(id="a", text="x" * 80), Chunk(id="b", text="x" * 80)], 100, counter="chars:1"
    )
    (record,) = [r for r in caplog.records if r.name.startswith("ragbudget")]
    assert record.name == "ragbudget.budget"
    assert record.levelno == logging.DEBUG
    assert record.getMessage() == f"fit: {result.info.summary()}"
    assert result.info.summary() == "kept 1 of 2, 1 dropped; 80 of 100 tokens (chars:1)"
    caplog.clear()
    caplog.set_level(logging.INFO, logger="ragbudget")
    fit([Chunk(id="a", text="x" * 80), Chunk(id="b", text="x" * 80)], 100, counter="chars:1")
    assert not [r for r in caplog.records if r.name.startswith("ragbudget")]


def test_stop_counts_only_down_to_the_first_misfit() -> None:
    """1,000 retrieved chunks into a budget that holds five: "stop" counts six of them, the
    chunks behind the first misfit are dropped uncounted; "fill" has to count them all."""
    counted: list[str] = []

    def spy(text: str) -> int:
        counted.append(text)
        return len(text.split())

    chunks = [Chunk(id=f"c{i}", text=f"chunk {i} " + "word " * 8, score=-i) for i in range(1000)]
    result = fit(chunks, 50, counter=spy)
    assert [c.id for c in result.chunks] == ["c0", "c1", "c2", "c3", "c4"]
    assert result.info.dropped_ids == [f"c{i}" for i in range(5, 1000)]
    assert result.info.next_offset == 5
    assert len(counted) == 6

    counted.clear()
    filled = fit(chunks, 50, counter=spy, strategy="fill")
    assert len(filled.chunks) == 5
    assert len(counted) == 1000
