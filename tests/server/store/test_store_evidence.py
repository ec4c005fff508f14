"""search(evidence=True): merged spans and best-matching lines, still within the budget."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ragbudget import get_counter
from ragbudget_server.store import DocumentStore, SearchResponse, StoreError, selection

QUERIES = [
    "decode a JSON document",
    "fold a header value that is too long",
    "wait for several coroutines and collect their results",
    "x",
    "déjà vu 日本語",
]
_fixtures = settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def _check(
    response: SearchResponse, store: DocumentStore, counter: str | None, budget: int
) -> None:
    tc = get_counter(counter) if counter else store.counter
    text = response.to_text()
    assert tc.count(text) <= budget
    assert response.used_tokens == tc.count(text)
    for result in response.results:  # verbatim from the file, at the lines the header says
        lines = Path(result.source).read_text(encoding="utf-8").split("\n")
        assert response.format == "json" or result.text in text
        assert result.text == "\n".join(lines[result.start_line - 1 : result.end_line]) or (
            result.cut and result.text in "\n".join(lines[result.start_line - 1 : result.end_line])
        )
    if response.format == "json":
        assert len(json.loads(text)["results"]) == len(response.results)


@_fixtures
@given(
    query=st.sampled_from(QUERIES),
    budget=st.integers(120, 6000),
    fmt=st.sampled_from(["text", "json"]),
    counter=st.sampled_from([None, "tiktoken:cl100k_base"]),
    cap=st.sampled_from([None, 1, 2]),
)
def test_evidence_answers_fit_and_show_the_files_text(
    stdlib_store_embedded: DocumentStore,
    query: str,
    budget: int,
    fmt: str,
    counter: str | None,
    cap: int | None,
) -> None:
    store = stdlib_store_embedded
    args = {"max_tokens": budget, "limit": 20, "format": fmt, "counter": counter}
    try:
        store.search(query, evidence=False, **args)  # type: ignore[arg-type]
    except StoreError:  # too small for the plain prefix: evidence either says what it needs
        try:  # too, or (its cut can be shorter: best-matching lines) answers within the budget
            got = store.search(query, evidence=True, max_per_source=cap, **args)  # type: ignore[arg-type]
        except StoreError as exc:
            message = str(exc)
        else:
            _check(got, store, counter, budget)
            return
        assert "use max_tokens >=" in message
        return
    got = store.search(query, evidence=True, max_per_source=cap, **args)  # type: ignore[arg-type]
    _check(got, store, counter, budget)
    if cap is not None:
        sources = [r.source for r in got.results]
        assert all(sources.count(s) <= cap for s in sources)


@pytest.mark.parametrize("budget", [150, 500, 1000, 2000, 4000])
@pytest.mark.parametrize("query", QUERIES[:3])
def test_evidence_shows_every_file_the_plain_prefix_shows(
    stdlib_store_embedded: DocumentStore, query: str, budget: int
) -> None:
    store = stdlib_store_embedded
    plain = store.search(query, max_tokens=budget, limit=20, evidence=False)
    more = store.search(query, max_tokens=budget, limit=20, evidence=True)
    assert {r.source for r in plain.results} <= {r.source for r in more.results}
    assert len({r.source for r in more.results}) >= len({r.source for r in plain.results})


def test_adjacent_chunks_of_a_file_come_back_as_one_result(
    stdlib_store_embedded: DocumentStore,
) -> None:
    store = stdlib_store_embedded
    plain = store.search(QUERIES[1], max_tokens=100_000, limit=40, evidence=False)
    merged = store.search(QUERIES[1], max_tokens=100_000, limit=40, evidence=True)
    assert len(merged.results) < len(plain.results)  # the header-folding code spans chunks
    spans: dict[str, list[tuple[int, int]]] = {}
    for r in merged.results:
        spans.setdefault(r.source, []).append((r.start_line, r.end_line))
    for ranges in spans.values():  # no two results of one file overlap or touch
        ranges.sort()
        assert all(a[1] < b[0] for a, b in itertools.pairwise(ranges))
    shown = {(r.source, n) for r in merged.results for n in range(r.start_line, r.end_line + 1)}
    for r in plain.results:  # nothing the plain answer showed is lost
        assert all((r.source, n) in shown for n in range(r.start_line, r.end_line + 1))


def test_a_tight_budget_shows_more_files_through_best_matching_lines(
    stdlib_store_embedded: DocumentStore,
) -> None:
    store = stdlib_store_embedded
    plain = store.search(QUERIES[2], max_tokens=600, limit=10, evidence=False)
    more = store.search(QUERIES[2], max_tokens=600, limit=10, evidence=True)
    assert len(more.results) > len(plain.results)
    assert any(r.cut for r in more.results) and more.truncated
    assert more.notice is not None and "600-token budget" in more.notice


@pytest.mark.parametrize(("budget", "cap"), [(300, None), (900, None), (2500, None), (900, 1)])
@pytest.mark.parametrize("query", QUERIES[:3])
def test_evidence_pages_partition_the_ranking(
    stdlib_store_embedded: DocumentStore, query: str, budget: int, cap: int | None
) -> None:
    """Walking next_offset accounts for every ranked chunk exactly once: no repeats, no gaps."""
    store = stdlib_store_embedded
    limit, walked, offset = 60, [], 0
    ranked = [i for i, _ in store._ranked(store._backend.require(), query, limit, None)]
    pages = 0
    while offset is not None and offset < limit:
        page = store.search(
            query, max_tokens=budget, limit=limit - offset, offset=offset, evidence=True,
            max_per_source=cap, format="json",
        )  # fmt: skip
        ids = page.accounted_ids()
        assert sorted(ids) == sorted(ranked[offset : offset + len(ids)])  # a run from offset
        assert page.next_offset is None or page.next_offset == offset + len(ids)
        walked += ids
        offset, pages = page.next_offset, pages + 1
        assert pages <= limit
    assert sorted(walked) == sorted(ranked)


def test_evidence_pages_continue_and_concise_is_unchanged(
    stdlib_store_embedded: DocumentStore,
) -> None:
    store = stdlib_store_embedded
    first = store.search(QUERIES[0], max_tokens=800, limit=30, evidence=True, max_per_source=1)
    assert first.next_offset is not None and first.next_offset > 0
    again = store.search(QUERIES[0], max_tokens=800, limit=30, offset=first.next_offset,
                         evidence=True)  # fmt: skip
    assert again.offset == first.next_offset
    concise = store.search(QUERIES[0], max_tokens=800, concise=True)
    assert store.search(QUERIES[0], max_tokens=800, concise=True, evidence=True) == concise


@pytest.mark.parametrize("cap", [0, -1, 1001, 1.5, "2", True])
def test_a_bad_cap_is_named(stdlib_store_embedded: DocumentStore, cap: object) -> None:
    with pytest.raises(StoreError, match="max_per_source must be an integer from 1 to 1000"):
        stdlib_store_embedded.search("x", evidence=True, max_per_source=cap)  # type: ignore[arg-type]


@pytest.mark.parametrize("budget", [3000, 8000])
@pytest.mark.parametrize("query", QUERIES[:3])
def test_a_wide_evidence_page_reaches_as_far_as_the_plain_one(
    stdlib_store_embedded: DocumentStore, query: str, budget: int
) -> None:
    """Merging a chunk ranked far down narrows the page to the ranks before the first one left
    out; the page then widens again while the budget holds more ranks, so an evidence page
    accounts for at least the ranks a plain page shows (merged overlaps cost less, not more)."""
    store = stdlib_store_embedded
    plain = store.search(query, max_tokens=budget, limit=100, evidence=False)
    more = store.search(query, max_tokens=budget, limit=100)
    assert len(more.accounted_ids()) >= len(plain.results)
    assert more.used_tokens >= 0.8 * budget


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_the_plain_fallback_keeps_the_cap_per_file(
    stdlib_store_embedded: DocumentStore, monkeypatch: pytest.MonkeyPatch, fmt: str
) -> None:
    """Where the evidence selection cannot answer (made to fail here; a budget its renderings
    never fit does the same), the plain ranked prefix stands in: with a cap per file, it stops
    before the first rank past the cap, and the next page starts there."""

    def fails(*args: object, **kwargs: object) -> None:
        raise ValueError("not even an empty rendering fits")

    store = stdlib_store_embedded
    plain = store.search(QUERIES[0], max_tokens=6000, limit=30, evidence=False, format=fmt)
    sources = [r.source for r in plain.results]
    assert len(set(sources)) < len(sources)  # the plain prefix repeats a file
    monkeypatch.setattr(selection, "select", fails)
    got = store.search(QUERIES[0], max_tokens=6000, limit=30, max_per_source=1, format=fmt)
    shown = [r.source for r in got.results]
    assert shown and len(shown) == len(set(shown))
    assert [r.id for r in got.results] == [r.id for r in plain.results][: len(shown)]
    assert got.next_offset == len(shown)
    assert sources[len(shown)] in shown  # the rank the cap would leave out opens the next page
