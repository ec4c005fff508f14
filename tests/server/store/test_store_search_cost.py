"""A search does its per-search work once, and answers as before.

The evidence selection finds duplicates once for all hits and selects from the distinct texts of
each prefix it tries; `select` deduping each prefix itself (what it did before, and still does
when the hits are not in rank order) is the reference: the two give the same response. The
count of matching chunks is remembered while the store's content stays the same: a write that
bypasses the store (another client's add or delete) shows in the next search's count.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ragbudget import Chunk, get_counter
from ragbudget_server.store import DocumentStore, selection
from ragbudget_server.store.errors import StoreError
from ragbudget_server.store.search import Hit, Rendering

COUNTER = get_counter("chars:4")
WORDS = ["parse", "header", "cookie", "loop", "self", "(", ")", "def", "return", "x", "y"]


@st.composite
def ranked_hits(draw: st.DrawFn) -> list[Hit]:
    """Windows of lines of one to three files (adjacent and overlapping ones merge), copies
    of some under another file (duplicates), near copies (one word changed), in rank order."""
    hits: list[Hit] = []
    for f in range(draw(st.integers(1, 3))):
        lines = [
            " ".join(draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=8)))
            for _ in range(draw(st.integers(3, 40)))
        ]
        doc = "\n".join(lines)
        starts = [0]
        for line in lines:
            starts.append(starts[-1] + len(line) + 1)
        for _ in range(draw(st.integers(1, 8))):
            first = draw(st.integers(0, len(lines) - 1))
            last = draw(st.integers(first, min(len(lines) - 1, first + 10)))
            text = doc[starts[first] : starts[last + 1] - 1]
            hits.append(_hit(len(hits), text, f"/src/f{f}.py", first, last, starts[first]))
    for _ in range(draw(st.integers(0, 4))):  # a copy, or a near copy, under another file
        twin = draw(st.sampled_from(hits))
        text = twin.document
        if draw(st.booleans()):
            text = text.replace(draw(st.sampled_from(WORDS)), draw(st.sampled_from(WORDS)), 1)
        hits.append(_hit(len(hits), text, f"/copy/{len(hits)}.py", 0, text.count("\n"), 0))
    order = draw(st.permutations(range(len(hits))))
    gaps = draw(st.lists(st.sampled_from([0.0, 0.01, 0.05]), min_size=len(hits),
                         max_size=len(hits)))  # fmt: skip
    distance, ranked = 0.1, []
    for i, gap in zip(order, gaps, strict=True):
        distance += gap  # ties too
        h = hits[i]
        ranked.append(Hit(h.id, h.document, h.metadata, distance))
    return ranked


def _hit(n: int, text: str, source: str, first: int, last: int, start: int) -> Hit:
    meta: dict[str, Any] = {
        "source": source, "start_line": first + 1, "end_line": last + 1, "start_index": start,
        "end_index": start + len(text), "tokens": COUNTER.count(text), "counter": COUNTER.name,
    }  # fmt: skip
    return Hit(f"h{n}", text, meta, 0.0)


def _every_prefix_deduped_by_select(chunks: list[Chunk]) -> tuple[list[Chunk], None]:
    return chunks, None


@pytest.mark.slow  # 120 examples, each answered twice: ~4 s of CPU
@settings(max_examples=120, deadline=None)
@given(
    hits=ranked_hits(),
    budget=st.integers(60, 2500),
    cap=st.sampled_from([None, 1, 2]),
    fmt=st.sampled_from(["text", "json"]),
    offset=st.sampled_from([0, 30]),
)
def test_duplicates_found_once_answer_as_each_try_deduping(
    hits: list[Hit], budget: int, cap: int | None, fmt: str, offset: int
) -> None:
    def answer() -> tuple[dict[str, Any], str] | str:
        try:
            got = selection.evidence_response(
                hits, query="parse the cookie header", offset=offset, total_count=offset + 80,
                max_tokens=budget, counter=COUNTER, max_per_source=cap,
                rendering=Rendering.of(fmt, "offset={offset}"),
            )  # fmt: skip
        except StoreError as exc:  # a budget too small: the same advice either way
            return str(exc)
        assert COUNTER.count(got.to_text()) <= budget
        return got.model_dump(), got.to_text()

    fast = answer()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(selection, "_distinct", _every_prefix_deduped_by_select)
        reference = answer()
    assert fast == reference


def _write(root: Path, n: int) -> None:
    root.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        body = "\n".join(f"def handler_{i}_{j}(request):\n    return {j}\n" for j in range(40))
        (root / f"m{i}.py").write_text(body)


def test_the_count_of_matching_chunks_follows_any_write(tmp_path: Path) -> None:
    store = DocumentStore(path=tmp_path / "db", embedding="hashing")
    _write(tmp_path / "src", 3)
    store.ingest(tmp_path / "src")
    search: Callable[..., Any] = store.search
    first = search("handler request", limit=5, max_tokens=2000)
    assert first.total_count == store.collection.count()
    assert search("handler request", limit=5, file_type="py").total_count == first.total_count
    _write(tmp_path / "more", 2)  # an ingest through the store
    store.ingest(tmp_path / "more")
    grown = search("request handler", limit=5, max_tokens=2000)
    assert grown.total_count == store.collection.count() > first.total_count
    # A write that bypasses the store, as another client's would.
    some = store.collection.get(limit=3, include=[])["ids"]
    store.collection.delete(ids=some)
    after = search("handler for a request", limit=5, max_tokens=2000)
    assert after.total_count == store.collection.count() == grown.total_count - 3
    filtered = search("handler for a request", limit=5, file_type="py")
    assert filtered.total_count == after.total_count
    store.close()


def test_remembered_counts_a_text_over_a_limit_once_for_smaller_limits() -> None:
    """The tries of a page check the same long renderings against one budget: a text found over
    a limit is over any smaller one without a count, and is counted again for a larger one."""
    seen: list[str] = []

    def words(text: str) -> int:
        seen.append(text)
        return len(text.split())

    remembered = selection.Remembered(get_counter(words))
    text = "one two three four five"
    assert remembered.count_up_to(text, 3) > 3
    assert remembered.count_up_to(text, 2) > 2 and len(seen) == 1
    assert remembered.count_up_to(text, 10) == 5 and len(seen) == 2  # a larger limit: counted
    assert remembered.count_up_to(text, 4) > 4 and remembered.count(text) == 5
    assert len(seen) == 2  # counted whole once: every later check reads it
