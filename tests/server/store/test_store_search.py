"""Budgeted search and reads: the rendered response never exceeds max_tokens."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ragbudget import TokenCounter, get_counter
from ragbudget_server.store import DocumentStore, SearchResponse, StoreError
from ragbudget_server.store.errors import BudgetTooSmall
from ragbudget_server.store.search import Hit, budget_response

MakeStore = Callable[..., DocumentStore]
QUERIES = [
    "decode a JSON document",
    "event loop call_soon",
    "email header folding",
    "Future cancel callbacks",
    "x",
    "déjà vu 日本語",
]
_fixtures = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def _check(response: SearchResponse, counter: TokenCounter, max_tokens: int) -> None:
    text = response.to_text()
    assert counter.count(text) <= max_tokens
    if counter.name == response.counter:  # the whole answer, measured by the same counter
        assert response.used_tokens == counter.count(text)
    for result in response.results:  # each result's text is there verbatim
        assert result.text in text
    as_json = response.model_copy(update={"format": "json"}).to_text()
    assert len(json.loads(as_json)["results"]) == len(response.results)
    for result in response.results:
        assert result.start_line <= result.end_line


@pytest.mark.slow  # 40 searches of the stdlib store, a few rendered twice: ~3 s of CPU
@_fixtures
@given(
    query=st.sampled_from(QUERIES),
    max_tokens=st.integers(min_value=400, max_value=9000),
    limit=st.integers(min_value=1, max_value=60),
    offset=st.integers(min_value=0, max_value=40),
    counter=st.sampled_from(["tiktoken:cl100k_base", None, "chars:3"]),
    concise=st.booleans(),
)
def test_rendered_response_fits_the_budget(
    stdlib_store: DocumentStore,
    query: str,
    max_tokens: int,
    limit: int,
    offset: int,
    counter: str | None,
    concise: bool,
) -> None:
    response = stdlib_store.search(
        query, limit=limit, max_tokens=max_tokens, offset=offset, counter=counter, concise=concise
    )
    _check(response, get_counter(counter) if counter else stdlib_store.counter, max_tokens)
    assert len(response.results) >= 1  # 400 tokens always hold a (possibly cut) result
    if response.next_offset is not None:
        assert response.next_offset > offset


def test_pages_continue_the_ranking_without_gaps(stdlib_store: DocumentStore) -> None:
    query = "asyncio task cancellation"
    whole = stdlib_store.search(query, limit=30, max_tokens=200_000, evidence=False)
    assert not whole.truncated and len(whole.results) == 30
    assert whole.next_offset == 30  # more results exist past the limit
    seen: list[str] = []
    offset: int | None = 0
    while offset is not None and offset < 30:
        page = stdlib_store.search(
            query, limit=30 - offset, max_tokens=1500, offset=offset, evidence=False
        )
        _check(page, stdlib_store.counter, 1500)
        assert len(page.results) >= 1
        seen.extend(r.id for r in page.results)
        if page.truncated:
            assert page.notice and f'Use cursor="{page.next_cursor}" to continue' in page.notice
        offset = page.next_offset
    assert seen == [r.id for r in whole.results]


def test_stored_counts_are_used_when_the_counter_matches(tmp_path: Path, corpus: Path) -> None:
    counted: list[str] = []
    base = get_counter("tiktoken:cl100k_base")

    class Spy:
        name = "spy"
        exact = True

        def count(self, text: str) -> int:
            counted.append(text)
            return base.count(text)

    store = DocumentStore(path=tmp_path / "db", counter=Spy())
    store.ingest([corpus])
    counted.clear()
    response = store.search("decode JSON", max_tokens=3000, evidence=False)
    texts = {r.text for r in response.results}
    assert texts and not texts & set(counted)  # no chunk text was counted on its own
    assert all(r.tokens == base.count(r.text) for r in response.results)
    assert base.count(response.to_text()) <= 3000


def test_a_document_far_larger_than_the_budget_is_cut(
    make_store: MakeStore, stdlib: Path, cl100k: TokenCounter
) -> None:
    store = make_store(counter="tiktoken:cl100k_base")
    store.ingest([stdlib / "json" / "decoder.py"], chunk_tokens=20_000, overlap=0)
    [chunk] = store.collection.get(include=["metadatas"])["metadatas"]
    assert chunk["tokens"] > 2000
    response = store.search("JSONDecoder raw_decode", max_tokens=300, evidence=False)
    _check(response, cl100k, 300)
    [result] = response.results
    assert result.cut is True and response.truncated
    assert store.collection.get(ids=[result.id])["documents"][0].startswith(result.text)
    assert result.end_line < chunk["end_line"]
    assert result.header(1).endswith("(cut to fit)")
    assert response.notice and "cut to fit" in response.notice
    assert result.tokens == cl100k.count(result.text)


def test_concise_gives_snippets_and_fewer_fields(stdlib_store: DocumentStore) -> None:
    full = stdlib_store.search("scanstring", limit=5, evidence=False)
    concise = stdlib_store.search("scanstring", limit=5, concise=True)
    assert [r.id for r in concise.results] == [r.id for r in full.results]
    as_json = stdlib_store.search("scanstring", limit=5, concise=True, format="json")
    fields = json.loads(as_json.to_text())["results"][0].keys()
    assert set(fields) == {"id", "source", "start_line", "end_line", "text"}
    assert any("scanstring" in r.text for r in concise.results)
    assert len(concise.to_text()) < len(full.to_text()) / 3
    for r in concise.results:
        assert len(r.text) <= 241 and r.text.count("\n") <= 2


def test_filters_by_file_type_and_directory(stdlib_store: DocumentStore, stdlib: Path) -> None:
    mime = (stdlib / "email" / "mime").as_posix()
    response = stdlib_store.search("message", directory=mime, limit=20, max_tokens=50_000)
    assert response.results and all(r.source.startswith(mime + "/") for r in response.results)
    count = len(response.accounted_ids())  # adjacent chunks of a file come back as one span
    assert response.total_count == count < stdlib_store.collection.count()
    assert stdlib_store.search("message", file_type="md").total_count == 0
    assert stdlib_store.search("message", file_type=".PY").total_count > 0


def test_read_pages_through_a_document(stdlib_store: DocumentStore, stdlib: Path) -> None:
    path = stdlib / "json" / "decoder.py"
    original = path.read_text(encoding="utf-8")
    counter = stdlib_store.counter
    pages: list[str] = []
    offset: int | None = 1
    while offset is not None:
        page = stdlib_store.read(path.as_posix(), offset=offset, max_tokens=700)
        assert counter.count(page.to_text()) <= 700
        assert page.start_line == offset and page.total_lines == original.count("\n")
        pages.append(page.text)
        if page.next_offset is not None:
            assert page.notice and f"Use offset={page.next_offset} to continue" in page.notice
        offset = page.next_offset
    assert len(pages) > 3
    assert "\n".join(pages) + "\n" == original
    # By a unique path suffix, and with a line limit.
    short = stdlib_store.read("json/decoder.py", offset=5, limit=3)
    assert short.text == "\n".join(original.split("\n")[4:7]) and short.next_offset == 8
    assert short.notice == f"[Showing lines 5-7 of {short.total_lines}. Use offset=8 to continue]"


@_fixtures
@given(
    max_tokens=st.integers(min_value=120, max_value=3000),
    offset=st.integers(min_value=1, max_value=244),
    limit=st.one_of(st.none(), st.integers(min_value=1, max_value=500)),
)
def test_read_fits_the_budget(
    stdlib_store: DocumentStore,
    cl100k: TokenCounter,
    max_tokens: int,
    offset: int,
    limit: int | None,
) -> None:
    response = stdlib_store.read(
        "asyncio/queues.py", offset=offset, limit=limit, max_tokens=max_tokens, counter=cl100k
    )
    assert cl100k.count(response.to_text()) <= max_tokens
    if response.next_offset is not None:
        assert response.next_offset > offset and response.truncated


def test_tiny_budget_is_an_error_that_names_the_minimum(stdlib_store: DocumentStore) -> None:
    with pytest.raises(StoreError, match=r"max_tokens=20 .* use max_tokens >= \d+") as info:
        stdlib_store.search("json", max_tokens=20, limit=5)
    minimum = int(str(info.value).rsplit(">= ", 1)[1])
    response = stdlib_store.search("json", max_tokens=minimum, limit=5)
    assert stdlib_store.counter.count(response.to_text()) <= minimum
    with pytest.raises(StoreError, match=r"max_tokens=5 .* use max_tokens >= \d+") as info:
        stdlib_store.read("json/decoder.py", max_tokens=5)
    minimum = int(str(info.value).rsplit(">= ", 1)[1])
    page = stdlib_store.read("json/decoder.py", max_tokens=minimum)
    assert stdlib_store.counter.count(page.to_text()) <= minimum
    # The error carries its numbers: no caller parses them back from the text.
    assert isinstance(info.value, BudgetTooSmall)
    assert (info.value.asked, info.value.needed) == (5, minimum)


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"query": ""}, "query must be a non-empty string"),
        ({"query": "   "}, "query must be a non-empty string"),
        ({"query": "x" * 20_000}, "query is 20,000 characters"),
        ({"limit": 0}, "limit must be between 1"),
        ({"limit": -3}, "limit must be between 1"),
        ({"limit": 10**7}, "limit must be between 1"),
        ({"limit": True}, "limit must be an int"),
        ({"max_tokens": 0}, "max_tokens must be between 1"),
        ({"max_tokens": -100}, "max_tokens must be between 1"),
        ({"max_tokens": 10**12}, "max_tokens must be between 1"),
        ({"offset": -1}, "offset must be between 0"),
        ({"offset": 5000}, "offset 5000 is past the end"),
        ({"file_type": ""}, "file_type must be an extension"),
        ({"directory": " "}, "directory must be a folder path"),
        ({"counter": "nope:1"}, "unknown counter spec"),
    ],
)
def test_bad_search_input(
    stdlib_store: DocumentStore, kwargs: dict[str, object], needle: str
) -> None:
    args: dict[str, object] = {"query": "json"} | kwargs
    with pytest.raises(ValueError, match=needle):
        stdlib_store.search(**args)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("source", "kwargs", "needle"),
    [
        ("nope.py", {}, "unknown source 'nope.py'"),
        ("", {}, "source must be"),
        ("__init__.py", {}, "is ambiguous"),
        ("json/decoder.py", {"offset": 0}, "offset must be between 1"),
        ("json/decoder.py", {"offset": 10**6}, "offset 1000000 is past the end"),
        ("json/decoder.py", {"limit": 0}, "limit must be between 1"),
        ("json/decoder.py", {"max_tokens": -1}, "max_tokens must be between 1"),
    ],
)
def test_bad_read_input(
    stdlib_store: DocumentStore, source: str, kwargs: dict[str, int], needle: str
) -> None:
    with pytest.raises(StoreError, match=needle):
        stdlib_store.read(source, **kwargs)


def test_stats_describe_the_store(stdlib_store: DocumentStore) -> None:
    stats = stdlib_store.stats()
    assert stats.chunks == stdlib_store.collection.count()
    assert stats.documents == len(stdlib_store.sources()) > 60
    assert stats.embedding == "hashing" and stats.counter == "exact"  # the default with bpe-openai
    assert stats.collection == "stdlib-eval"
    assert (stats.path is None) != (stats.server is None)


NASTY = (
    'He said "hi" \\ then\ttabbed \x01\x02 control, emoji 🎉🎉, 日本語のテキスト, '
    "a very long line "
    * 600
    + "\n"
    + "\n".join(f"line {i}: {{'key': \"value\\\\n\"}} <tag/> \u00e9\u00e8" for i in range(400))
)


@pytest.fixture(scope="module")
def nasty_store(tmp_path_factory: pytest.TempPathFactory) -> DocumentStore:
    """One document that JSON escaping inflates (quotes, backslashes, control characters,
    emoji, CJK), with a 10,000-character line, chunked far larger than the budgets below."""
    folder = tmp_path_factory.mktemp("nasty")
    (folder / "nasty.txt").write_text(NASTY, encoding="utf-8")
    store = DocumentStore(path=folder / "db", counter="tiktoken:cl100k_base")
    store.ingest([folder / "nasty.txt"], chunk_tokens=6000, overlap=0)
    return store


@pytest.mark.slow
@settings(max_examples=40, deadline=None)
@given(
    max_tokens=st.integers(min_value=500, max_value=7000),
    counter=st.sampled_from(["tiktoken:cl100k_base", "tiktoken:o200k_base", None, "chars:2"]),
    concise=st.booleans(),
    query=st.sampled_from(["control emoji", "line key value tag", "日本語"]),
)
def test_escaping_heavy_text_never_overflows(
    nasty_store: DocumentStore, max_tokens: int, counter: str | None, concise: bool, query: str
) -> None:
    response = nasty_store.search(
        query, max_tokens=max_tokens, limit=20, counter=counter, concise=concise
    )
    _check(response, get_counter(counter) if counter else nasty_store.counter, max_tokens)
    assert len(response.results) >= 1
    page = nasty_store.read("nasty.txt", max_tokens=max_tokens, counter=counter)
    assert (get_counter(counter) if counter else nasty_store.counter).count(
        page.to_text()
    ) <= max_tokens


def test_search_fetches_only_what_the_budget_reaches(
    stdlib_store: DocumentStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Texts and metadata are fetched for the ranked prefix the budget can reach, and the
    response is the one a search that fetched all 50 records would give (by vectors alone,
    to compare with Chroma's own ranking)."""
    from ragbudget_server.store import search as search_module

    query = "decode a JSON document"
    ranking = stdlib_store.collection.query(
        query_embeddings=stdlib_store._backend.embed([query], query=True),
        n_results=50,
        include=["distances"],
    )["ids"][0]
    fetched: list[str] = []
    records = DocumentStore._records

    def spy(collection: object, ids: list[str]) -> dict[str, tuple[str, dict[str, object]]]:
        fetched.extend(ids)
        return records(collection, ids)

    monkeypatch.setattr(DocumentStore, "_records", staticmethod(spy))
    lean = stdlib_store.search(query, limit=50, max_tokens=1500, evidence=False, hybrid=False)
    k = len(lean.results)
    assert lean.truncated and 1 <= k < 50
    assert fetched == ranking[: len(fetched)] and k < len(fetched) < 50
    assert [r.id for r in lean.results] == ranking[:k]
    assert lean.next_offset == k  # the first result left out starts the next page

    fetched.clear()  # a first batch as large as the page: every record fetched
    monkeypatch.setattr(search_module, "_TOKENS_PER_RESULT_GUESS", 1)
    full = stdlib_store.search(query, limit=50, max_tokens=1500, evidence=False, hybrid=False)
    assert fetched == ranking
    assert full.to_text() == lean.to_text()


def test_records_deleted_after_the_query_are_skipped() -> None:
    from ragbudget_server.store.search import fetch_ranked

    docs = {f"r{i}": (f"text {i}", {"tokens": 50, "json_tokens": 50}) for i in range(10)}
    asked: list[list[str]] = []

    def fetch(ids: list[str]) -> dict[str, tuple[str, dict[str, object]]]:
        asked.append(ids)
        return {i: docs[i] for i in ids if i in docs and i != "r1"}  # r1 deleted meanwhile

    ranked = [(f"r{i}", i / 10) for i in range(10)]
    hits = fetch_ranked(ranked, fetch, max_tokens=150, concise=False)
    assert [h.id for h in hits] == ["r0", "r2", "r3", "r4", "r5", "r6", "r7"]
    assert asked == [["r0", "r1", "r2", "r3"], ["r4", "r5", "r6", "r7"]]
    assert [h.id for h in fetch_ranked(ranked, fetch, max_tokens=150, concise=True)] == [
        h for h, _ in ranked if h != "r1"
    ]


def _hit(rank: int, source: str, text: str, counter: TokenCounter) -> Hit:
    metadata = {
        "source": source,
        "start_line": 1,
        "end_line": text.count("\n") + 1,
        "tokens": counter.count(text),
        "counter": counter.name,
    }
    return Hit(f"id{rank}", text, metadata, 0.1 * rank)


def test_a_result_that_fits_is_kept_whatever_else_was_fetched() -> None:
    """The search fetches a ranked prefix of records, so the results after the ones shown may
    or may not be there. The answer must not depend on it: a guess of the headers from every
    fetched source (whose shared folder shrinks when a far one comes in) once bounded the
    results that could fit below a prefix that fit, and dropped a result."""
    counter = get_counter("estimate")
    deep = "/srv/projects/a-long-project-name/src/package/module"
    text = "\n".join(f"def function_{j}(value):\n    return value * {j}" for j in range(12))
    near = [_hit(i, f"{deep}/file{i}.py", text, counter) for i in range(4)]
    far = [_hit(4 + i, f"/tmp/other{i}.py", text, counter) for i in range(3)]
    for budget in range(300, 1400, 3):
        shown = [
            len(
                budget_response(
                    hits, query="q", offset=0, total_count=7, max_tokens=budget,
                    counter=counter, concise=False,
                ).results
            )
            for hits in (near, near + far)
        ]  # fmt: skip
        if shown[0] < len(near):  # the far sources are not reached
            assert shown[1] == shown[0], budget
