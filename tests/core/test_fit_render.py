"""fit(render=, cut=): items fit does not show itself, counted and cut as the model sees them."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ragbudget import CUT_MARKER, Chunk, fit, get_counter, rank_chunks, with_marker

COUNTER = get_counter("estimate")
CHARS = get_counter("chars:1")

_text = st.text(min_size=0, max_size=300) | st.sampled_from(
    ["", "word " * 200, "One. Two three.\n\nFour five six. " * 30, "x" * 1500]
)
_score = st.none() | st.floats(min_value=-5, max_value=5, allow_nan=False)


@st.composite
def chunk_lists(draw: st.DrawFn) -> list[Chunk]:
    texts = draw(st.lists(_text, max_size=10))
    return [
        Chunk(id=f"c{i}", text=t, score=draw(_score), metadata={"source": f"file{i % 3}.md"})
        for i, t in enumerate(texts)
    ]


def header(chunk: Chunk) -> str:
    """A document formatter: a header the model reads, then the text."""
    return f"source: {chunk.metadata['source']}\n---\n{chunk.text}"


@settings(max_examples=80, deadline=None)
@given(
    chunks=chunk_lists(),
    max_tokens=st.integers(min_value=0, max_value=400),
    strategy=st.sampled_from(["stop", "fill"]),
    oversize=st.sampled_from(["truncate", "drop"]),
    separator=st.sampled_from([None, "\n\n", ""]),
)
def test_rendered_budget_holds(
    chunks: list[Chunk], max_tokens: int, strategy: Any, oversize: Any, separator: str | None
) -> None:
    """The renderings of what comes back, as the caller joins them, fit the budget; the best
    come first; every id is kept or reported; the caller's chunks are untouched."""
    before = [c.model_copy(deep=True) for c in chunks]
    result = fit(chunks, max_tokens, counter=COUNTER, strategy=strategy, oversize=oversize,
                 separator=separator, render=header)  # fmt: skip
    assert chunks == before
    shown = [header(c) for c in result.chunks]
    if separator is None:
        assert sum(COUNTER.count(s) for s in shown) <= max_tokens
        assert result.tokens == [COUNTER.count(s) for s in shown]
    else:
        assert COUNTER.count(separator.join(shown)) <= max_tokens
    assert result.info.used_tokens <= max_tokens
    info = result.info
    assert sorted([c.id for c in result.chunks] + info.dropped_ids) == sorted(c.id for c in chunks)
    assert info.truncated == bool(info.dropped_ids or info.cut_ids)
    ranked = [chunks[i].id for i in rank_chunks(chunks)]
    assert result.ranks == [ranked.index(c.id) for c in result.chunks]
    if strategy == "stop" and info.next_offset is not None:  # best first: none kept after
        assert all(rank < info.next_offset for rank in result.ranks)  # the first misfit
    original = {c.id: c.text for c in chunks}
    for chunk in result.chunks:  # the text returned is the chunk's own, or a cut of it
        if chunk.id in info.cut_ids:
            head = chunk.text.split("[... cut to fit")[0].rstrip()
            assert "[... cut to fit" in chunk.text and original[chunk.id].startswith(head)
        else:
            assert chunk.text == original[chunk.id]


def test_render_is_what_is_counted() -> None:
    chunks = [Chunk(id="a", text="alpha", score=0.9), Chunk(id="b", text="beta", score=0.1)]
    result = fit(chunks, 100, counter=CHARS, render=lambda c: f"[{c.id}] {c.text}")
    assert [c.text for c in result.chunks] == ["alpha", "beta"]  # the chunks' own texts
    assert result.tokens == [len("[a] alpha"), len("[b] beta")]
    tight = fit(chunks, 12, counter=CHARS, render=lambda c: f"[{c.id}] {c.text}")
    assert [c.id for c in tight.chunks] == ["a"]
    assert tight.info.dropped_ids == ["b"] and tight.info.reason == "token_budget"


def test_no_render_is_the_text_itself() -> None:
    chunks = [Chunk(id=str(i), text="word " * (20 * i), score=1 / (i + 1)) for i in range(5)]
    for separator in (None, "\n\n"):
        plain = fit(chunks, 150, counter=COUNTER, separator=separator)
        same = fit(chunks, 150, counter=COUNTER, separator=separator, render=lambda c: c.text)
        assert plain == same


def test_an_oversized_item_is_cut_in_its_rendered_form() -> None:
    text = "First sentence here. " * 100
    chunk = Chunk(id="big", text=text, metadata={"source": "notes.md"})
    result = fit([chunk], 200, counter=CHARS, render=header)
    (kept,) = result.chunks
    assert result.info.cut_ids == ["big"] and result.info.reason == "chunk_cut"
    assert header(kept).startswith("source: notes.md\n---\nFirst sentence here.")  # header whole
    assert CHARS.count(header(kept)) == result.tokens[0] <= 200
    assert kept.text.endswith(CUT_MARKER.format(limit=200, total=CHARS.count(header(chunk))))
    assert chunk.text == text  # the caller's chunk is not touched


def test_cut_builds_the_cut_chunk() -> None:
    seen: list[str] = []

    def cut(chunk: Chunk, kept: str, marker: str) -> Chunk:
        seen.append(kept)
        return chunk.model_copy(
            update={"text": with_marker(kept, marker), "metadata": {"kept": len(kept)}}
        )

    chunk = Chunk(id="big", text="Alpha beta. " * 50)
    result = fit([chunk], 150, counter=CHARS, cut=cut)
    (kept,) = result.chunks
    assert seen and all(chunk.text.startswith(k) for k in seen)
    marker = CUT_MARKER.format(limit=150, total=len(chunk.text))
    assert kept.text == with_marker(chunk.text[: kept.metadata["kept"]], marker)
    assert result.tokens == [len(kept.text)] and len(kept.text) <= 150


def test_a_header_alone_over_the_budget_drops_the_item() -> None:
    chunk = Chunk(id="a", text="short", metadata={"source": "x" * 100})
    result = fit([chunk], 50, counter=CHARS, render=header)
    assert result.chunks == [] and result.info.dropped_ids == ["a"]


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"render": "header"}, "render"),
        ({"render": 3}, "render"),
        ({"cut": "cut"}, "cut"),
        ({"render": lambda c: None}, "render"),
        ({"render": lambda c: c}, "render"),
        ({"cut": lambda c, kept, marker: kept}, "cut"),
        ({"cut": lambda c, kept, marker: c.model_copy(update={"id": "other"})}, "cut"),
    ],
)
def test_bad_callables_name_the_argument(kwargs: dict[str, Any], name: str) -> None:
    chunks = [Chunk(id="a", text="word " * 100)]
    with pytest.raises(TypeError, match=rf"^{name} must"):
        fit(chunks, 10, counter=CHARS, **kwargs)


def test_widened_reports_what_was_left_out_around_the_fit() -> None:
    """A caller that leaves items out around the fit (a cap per source) reports them through
    `widened`: truncated and reason follow by the rule `TruncationInfo.of` applies."""
    info = fit([Chunk(id="a", text="alpha")], 100, counter=CHARS).info
    assert (info.truncated, info.reason) == (False, None)
    wide = info.widened(original_count=3, dropped_ids=["b", "c"])
    assert (wide.truncated, wide.reason, wide.original_count) == (True, "token_budget", 3)
    assert wide.dropped_ids == ["b", "c"] and wide.returned_count == 1
    assert (info.truncated, info.dropped_ids) == (False, [])  # a new report: the fit's stands


def test_a_lone_cut_chunk_fits_without_the_separator_it_was_counted_with() -> None:
    # Found by the property above: the rendering plus "\n\n" counted 129 and the rendering
    # alone (what `separator.join` of one text gives) 130 by the estimate.
    chunk = Chunk(id="c0", text="word " * 200, metadata={"source": "file0.md"})
    result = fit(
        [chunk], 129, counter=COUNTER, oversize="truncate", separator="\n\n", render=header
    )
    assert result.info.cut_ids == ["c0"] and not result.info.dropped_ids
    joined = "\n\n".join(header(c) for c in result.chunks)
    assert COUNTER.count(joined) == result.info.used_tokens <= 129
