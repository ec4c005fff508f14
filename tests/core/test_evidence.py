"""Evidence selection: the budget holds, every id is accounted for, inputs are never mutated.

Chunks are windows of random documents with their offsets in metadata (as the store and the
plugins give them), so merging, duplicates (the same window twice under another id) and caps
all happen.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ragbudget import Chunk, get_counter
from ragbudget.budget import rank_chunks
from ragbudget.evidence import (
    Positions,
    dedupe,
    diversify,
    merge_adjacent,
    select,
    similarity,
)
from ragbudget.snippets import best_window, fair_shares, query_words, rank_weights

CHARS = get_counter("chars:1")
WORDS = ["alpha", "beta", "gamma", "delta", "cookie", "header", "loop", "\n", "\n\n"]


@st.composite
def ranked_chunks(draw: st.DrawFn) -> tuple[list[Chunk], dict[str, str]]:
    """Chunks over one to three documents (some windows repeated under new ids), and the
    documents by source."""
    docs: dict[str, str] = {}
    chunks: list[Chunk] = []
    for s in range(draw(st.integers(1, 3))):
        words = draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=60))
        doc = " ".join(words)
        source = f"/src/f{s}.py"
        docs[source] = doc
        for _ in range(draw(st.integers(0, 5))):
            start = draw(st.integers(0, len(doc) - 1))
            end = draw(st.integers(start + 1, len(doc)))
            meta: dict[str, Any] = {"source": source, "start_index": start, "end_index": end,
                                    "start_line": doc.count("\n", 0, start) + 1}  # fmt: skip
            meta["end_line"] = meta["start_line"] + doc.count("\n", start, end)
            score = draw(st.none() | st.floats(0, 1))
            chunks.append(Chunk(id=f"c{len(chunks)}", text=doc[start:end], score=score,
                                metadata=meta))  # fmt: skip
    if chunks and draw(st.booleans()):  # a copy of one text under another id
        twin = draw(st.sampled_from(chunks))
        chunks.append(twin.model_copy(update={"id": "twin", "metadata": {"source": "/x.py"}}))
    return draw(st.permutations(chunks)), docs


options = st.fixed_dictionaries(
    {
        "merge": st.booleans(),
        "dedupe_threshold": st.sampled_from([None, 0.9, 0.5]),
        "max_per_source": st.sampled_from([None, 1, 2]),
        "mmr": st.sampled_from([None, 0.5]),
        "snippets": st.booleans(),
        "min_share": st.integers(1, 60),
        "query": st.sampled_from([None, "cookie header", "loop"]),
    }
)


def header(rank: int, chunk: Chunk) -> str:
    return f"[{rank}] {chunk.metadata.get('source')}"


def _accounted(report: Any) -> list[str]:
    members = [i for ids in report.merged.values() for i in ids]
    return [*report.kept_ids, *members, *report.deduped, *report.capped_ids, *report.dropped_ids]


@settings(max_examples=150, deadline=None)
@given(data=ranked_chunks(), budget=st.integers(0, 400), opts=options)
def test_select_fits_accounts_for_every_id_and_mutates_nothing(
    data: tuple[list[Chunk], dict[str, str]], budget: int, opts: dict[str, Any]
) -> None:
    chunks, docs = data
    before = [c.model_dump() for c in chunks]
    got = select(chunks, budget, counter=CHARS, header=header, **opts)
    assert [c.model_dump() for c in chunks] == before
    assert CHARS.count(got.text) <= budget
    assert got.report.used_tokens == CHARS.count(got.text)
    assert got.text == "\n\n".join(f"{header(i, c)}\n{c.text}" for i, c in enumerate(got.chunks, 1))
    accounted = _accounted(got.report)
    assert sorted(accounted) == sorted(c.id for c in chunks)  # each id exactly once
    assert got.report.kept_ids == [c.id for c in got.chunks]
    assert set(got.report.cut_ids) <= set(got.report.kept_ids)
    for chunk in got.chunks:  # every shown text is where its metadata says it is
        meta = chunk.metadata
        if meta["source"] in docs:
            doc = docs[meta["source"]]
            assert doc[meta["start_index"] : meta["end_index"]] == chunk.text
            assert meta["start_line"] == doc.count("\n", 0, meta["start_index"]) + 1
    if opts["max_per_source"] is not None:
        sources = [c.metadata["source"] for c in got.chunks]
        assert all(sources.count(s) <= opts["max_per_source"] for s in sources)


@settings(max_examples=100, deadline=None)
@given(data=ranked_chunks(), budget=st.integers(0, 400), min_share=st.integers(1, 80))
def test_select_keeps_at_least_the_plain_prefix(
    data: tuple[list[Chunk], dict[str, str]], budget: int, min_share: int
) -> None:
    """Never worse than the plain top-k prefix (the longest ranked run of whole chunks that
    fits): every chunk it shows is shown (maybe cut)."""
    chunks, _ = data
    ranked = [chunks[i] for i in rank_chunks(chunks)]
    k = max(k for k in range(len(ranked) + 1)
            if CHARS.count("\n\n".join(c.text for c in ranked[:k])) <= budget)  # fmt: skip
    prefix = ranked[:k]
    got = select(chunks, budget, counter=CHARS, merge=False, dedupe_threshold=None,
                 min_share=min_share)  # fmt: skip
    assert {c.id for c in prefix} <= set(got.report.kept_ids)


@settings(max_examples=150, deadline=None)
@given(data=ranked_chunks())
def test_merge_spans_hold_their_members_once(data: tuple[list[Chunk], dict[str, str]]) -> None:
    chunks, docs = data
    before = [c.model_dump() for c in chunks]
    merged, members = merge_adjacent(chunks)
    assert [c.model_dump() for c in chunks] == before
    ids = [c.id for c in merged] + [i for group in members.values() for i in group]
    assert sorted(ids) == sorted(c.id for c in chunks)
    by_id = {c.id: c for c in chunks}
    for span in merged:
        meta = span.metadata
        if meta["source"] not in docs:
            continue
        doc = docs[meta["source"]]
        assert span.text == doc[meta["start_index"] : meta["end_index"]]
        for other in members.get(span.id, []):  # each member lies inside its span
            m = by_id[other].metadata
            assert meta["start_index"] <= m["start_index"] <= m["end_index"] <= meta["end_index"]
    spans = [(c.metadata["source"], c.metadata["start_index"], c.metadata["end_index"])
             for c in merged if c.metadata["source"] in docs]  # fmt: skip
    for a in spans:  # no two spans of one source touch or overlap any more
        for b in spans:
            if a is not b and a[0] == b[0]:
                assert a[2] < b[1] or b[2] < a[1]


def test_merge_counts_the_overlap_once_and_keeps_the_best_place() -> None:
    doc = "0123456789abcdefghij"
    chunks = [
        Chunk(id="b", text=doc[8:20], score=0.9, metadata={"source": "s", "start_index": 8}),
        Chunk(id="x", text="other", score=0.5, metadata={"source": "t", "start_index": 0}),
        Chunk(id="a", text=doc[0:10], score=0.1, metadata={"source": "s", "start_index": 0}),
    ]
    merged, members = merge_adjacent(chunks, Positions(end=None))
    assert [c.id for c in merged] == ["b", "x"]
    assert merged[0].text == doc
    assert merged[0].metadata["start_index"] == 0
    assert members == {"b": ["a"]}
    assert merged[0].score == 0.9


def test_chunks_whose_metadata_does_not_place_them_are_left_alone() -> None:
    chunks = [
        Chunk(id="a", text="abc", metadata={"source": "s", "start_index": 0, "end_index": 9}),
        Chunk(id="b", text="def", metadata={"source": "s", "start_index": 3, "end_index": 6}),
        Chunk(id="c", text="ghi"),
    ]
    merged, members = merge_adjacent(chunks)
    assert [c.id for c in merged] == ["a", "b", "c"] and members == {}


@settings(max_examples=100, deadline=None)
@given(data=ranked_chunks(), threshold=st.sampled_from([0.5, 0.9, 1.0]))
def test_dedupe_leaves_no_two_alike(
    data: tuple[list[Chunk], dict[str, str]], threshold: float
) -> None:
    chunks, _ = data
    kept, gone = dedupe(chunks, threshold=threshold)
    assert sorted([c.id for c in kept] + list(gone)) == sorted(c.id for c in chunks)
    kept_ids = [c.id for c in kept]
    assert all(twin in kept_ids for twin in gone.values())
    for i, a in enumerate(kept):
        for b in kept[i + 1 :]:
            assert similarity(a.text, b.text) < threshold
            assert " ".join(a.text.split()) != " ".join(b.text.split())


def test_dedupe_reports_the_better_ranked_copy() -> None:
    chunks = [
        Chunk(id="a", text="x  y z w"),
        Chunk(id="b", text="x y z w"),
        Chunk(id="c", text="q"),
    ]
    kept, gone = dedupe(chunks)
    assert [c.id for c in kept] == ["a", "c"] and gone == {"b": "a"}


@settings(max_examples=100, deadline=None)
@given(data=ranked_chunks(), cap=st.integers(1, 3), mmr=st.sampled_from([None, 0.0, 0.5, 1.0]))
def test_diversify_caps_sources_and_only_reorders(
    data: tuple[list[Chunk], dict[str, str]], cap: int, mmr: float | None
) -> None:
    chunks = [data[0][i] for i in rank_chunks(data[0])]
    kept, capped = diversify(chunks, max_per_source=cap, mmr=mmr)
    assert sorted([c.id for c in kept] + capped) == sorted(c.id for c in chunks)
    sources = [c.metadata["source"] for c in kept]
    assert all(sources.count(s) <= cap for s in sources)
    if mmr is None or mmr == 1.0:  # the cap alone, or relevance alone: still rank order
        assert kept == [c for c in chunks if c.id not in capped]


def test_mmr_on_embeddings_prefers_the_different_one() -> None:
    chunks = [Chunk(id="a", text="a", score=1.0), Chunk(id="b", text="b", score=0.9),
              Chunk(id="c", text="c", score=0.8)]  # fmt: skip
    vectors = {"a": [1.0, 0.0], "b": [1.0, 0.01], "c": [0.0, 1.0]}
    kept, _ = diversify(chunks, mmr=0.5, embeddings=vectors)
    assert [c.id for c in kept] == ["a", "c", "b"]
    with pytest.raises(ValueError, match="embeddings has no vector for chunk id 'c'"):
        diversify(chunks, mmr=0.5, embeddings={"a": [1.0], "b": [1.0]})


def test_a_tight_budget_shows_the_best_matching_lines_of_more_results() -> None:
    filler = "\n".join(f"line {i} of nothing much" for i in range(40))
    chunks = [
        Chunk(
            id=f"c{i}",
            text=f"{filler}\nthe cookie jar {i}\n{filler}",
            score=1 - i / 10,
            metadata={"source": f"f{i}"},
        )
        for i in range(4)
    ]
    got = select(chunks, 400, counter=CHARS, query="where is the cookie jar", min_share=100,
                 dedupe_threshold=None)  # fmt: skip
    assert got.report.kept_ids == ["c0", "c1", "c2", "c3"]
    assert all(f"cookie jar {i}" in c.text for i, c in enumerate(got.chunks))
    assert got.report.cut_ids == got.report.kept_ids
    plain = select(chunks, 400, counter=CHARS, snippets=False, dedupe_threshold=None)
    assert plain.report.kept_ids == plain.report.cut_ids == ["c0"]  # only the top one, cut
    assert plain.report.dropped_ids == ["c1", "c2", "c3"]


def test_shared_snippets_fill_the_budget_when_a_notice_is_said_once() -> None:
    # As the store renders: a notice when any result is cut, said once. Each result rendered
    # alone pays for it, so together they cost less than their shares; the budget left over
    # is shared out again, and an overshooting round gives back half, not all, of what it added.
    filler = "\n".join(f"line {i} of nothing much" for i in range(40))
    chunks = [
        Chunk(id=f"c{i}", text=f"{filler}\nthe cookie jar {i}\n{filler}", score=1 - i / 10,
              metadata={"source": f"f{i}"})
        for i in range(6)
    ]  # fmt: skip
    whole = {c.id: c.text for c in chunks}

    def render(kept: list[Chunk]) -> str:
        body = "\n\n".join(c.text for c in kept)
        cut = any(c.text != whole[c.id] for c in kept)
        return body + ("\n[some results were cut to fit the budget" + "." * 40 + "]" if cut else "")

    budget = 1200
    got = select(chunks, budget, counter=CHARS, query="the cookie jar", render=render,
                 min_share=100, dedupe_threshold=None)  # fmt: skip
    assert got.report.kept_ids == [c.id for c in chunks]
    assert all(f"cookie jar {i}" in c.text for i, c in enumerate(got.chunks))
    assert CHARS.count(got.text) == got.report.used_tokens <= budget
    assert got.report.used_tokens >= 0.9 * budget


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"max_tokens": -1}, "max_tokens must be >= 0"),
        ({"max_tokens": 10, "min_share": 0}, "min_share must be >= 1"),
        ({"max_tokens": 10, "max_per_source": 0}, "max_per_source must be >= 1"),
        ({"max_tokens": 10, "mmr": 2.0}, "mmr must be between 0 and 1"),
        ({"max_tokens": 10, "dedupe_threshold": 0.0}, "threshold must be in"),
        ({"max_tokens": 1, "render": lambda chunks: "envelope"}, "cannot hold even an empty"),
    ],
)
def test_bad_arguments_are_named(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        select([Chunk(id="a", text="x")], counter=CHARS, **kwargs)


def test_snippet_helpers() -> None:
    assert query_words("How do I parse the Cookies?") == ["cooki", "parse"]
    assert fair_shares([5, 50, 50, 50], 95) == [5, 30, 30, 30]
    assert sum(fair_shares([7, 9, 100], 20)) <= 20
    # Weighted: the heavier result gets its weight's part; one cheaper than its part keeps
    # its cost and the rest goes to the others.
    assert fair_shares([100, 100, 100], 80, [2, 1, 1]) == [40, 20, 20]
    assert fair_shares([10, 100, 100], 90, [3, 1, 1]) == [10, 40, 40]
    assert rank_weights(3) == [3.0, 1.5, 1.0]
    with pytest.raises(ValueError, match="weights must be one positive number per cost"):
        fair_shares([1, 2], 10, [1, 0])
    assert best_window("a\nb\nc", [], 3) == 0
    # Context above the matching line only while the matching line still fits.
    assert best_window("a\nb\nc\nd\ncookie jar\ne", ["cooki"], 12) == 8
    assert best_window("a\nb\nc\nd\ncookie jar\ne", ["cooki"], 15) == 4
    assert best_window("x\ny\nz cookie\nw", ["cooki"], 100) == 0  # all of it fits


def test_best_window_prefers_more_of_the_query_words_to_one_word_often() -> None:
    # Three lines that name "text" (as every line of a module about text does) against one
    # line naming two of the words: the window the query's words describe best wins.
    text = "wrap text\nfill text\nshorten text\nx\ny\nz\nremove common leading whitespace\nw"
    words = query_words("strip the common leading text")
    assert words == ["commo", "leadi", "strip", "text"]
    start = best_window(text, words, 36)
    assert text[start:].startswith("z\nremove common")  # one line of context fits above
    # The same words, "text" named most: the window where it is named most.
    assert best_window(text, ["text"], 36) == 0


def test_a_cjk_query_cuts_to_its_lines() -> None:
    # No spaces between words: the query's character bigrams find the line that answers.
    text = "Python\n" * 6 + "東京都庁の開庁時間は午前八時半から\n" + "その他\n" * 6
    words = query_words("東京都庁は何時に開きますか")
    assert "都庁" in words and "何時" in words
    start = best_window(text, words, 30)
    assert text[start:].lstrip("Python\n").startswith("東京都庁の開庁時間")
