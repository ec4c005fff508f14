"""Hybrid search: the lexical index stays in step with the store, and finds what vectors miss."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from ragbudget_server.store import DocumentStore
from ragbudget_server.store.hybrid import index_for, rrf
from ragbudget_server.store.lexical import LexicalIndex, cjk_bigrams, match_query

MakeStore = Callable[..., DocumentStore]

CJK = {
    "tokyo.txt": "東京都庁の開庁時間は午前八時半から午後五時十五分までです。\n申請書は窓口で受け付けます。\n",
    "retry_zh.txt": "如何配置重试次数：在配置文件中设置最大重试次数为五次。\n",
    "reset_ko.txt": "비밀번호를 재설정하려면 설정 메뉴에서 계정을 선택하십시오.\n",
}
QUESTIONS = {
    "東京都庁は何時に開きますか": "tokyo.txt",
    "重试次数在哪里配置": "retry_zh.txt",
    "비밀번호 재설정 방법": "reset_ko.txt",
}


def index_ids(store: DocumentStore) -> set[str]:
    """The chunk ids the store's lexical index holds."""
    return index_for(store._backend).ids()


def chunk_ids(store: DocumentStore) -> set[str]:
    return set(store.collection.get(include=[])["ids"])


def write(folder: Path, files: dict[str, str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def test_cjk_runs_become_bigrams_and_other_text_stays() -> None:
    assert cjk_bigrams("東京都 max_retries") == " 東京 京都  max_retries"
    assert cjk_bigrams("ｶﾀｶﾅ") == " カタ タカ カナ "  # NFKC: half-width kana made whole
    assert match_query("東京都の max_retries?") == [
        ('"東京"', "東京"), ('"京都"', "京都"), ('"都の"', "都の"), ('"max_retries?"', None),
    ]  # fmt: skip
    assert match_query(' "quoted" x ') == [('"""quoted"""', "quoted"), ('"x"', "x")]
    assert match_query("?? --") == []


@given(st.lists(st.lists(st.sampled_from("abcdefgh"), unique=True), max_size=4))
def test_rrf_ranks_each_id_once_and_a_shared_first_id_first(rankings: list[list[str]]) -> None:
    fused = rrf(rankings)
    assert sorted(fused) == sorted({i for r in rankings for i in r})
    if rankings and all(r and r[0] == rankings[0][0] for r in rankings):
        assert fused[0] == rankings[0][0]
    if len(rankings) == 2 and rankings[0] and rankings[1]:  # a swap ties: the first list wins
        a, b = rankings[0][0], rankings[1][0]
        swapped = rankings[0][1:2] == [b] and rankings[1][1:2] == [a]
        if swapped:
            assert fused[0] == a


def test_the_index_stays_in_step_with_ingest_change_and_prune(
    make_store: MakeStore, tmp_path: Path, corpus: Path
) -> None:
    store = make_store()
    store.ingest([corpus])
    assert index_ids(store) == chunk_ids(store) and chunk_ids(store)
    assert store.stats().lexical.startswith("on")

    decoder = corpus / "decoder.py"
    decoder.write_text(decoder.read_text() + "\n\ndef zanzibar_quux():\n    return 1\n")
    before = chunk_ids(store)
    store.ingest([corpus])
    assert chunk_ids(store) != before
    assert index_ids(store) == chunk_ids(store)
    assert store.candidates("zanzibar_quux", limit=1, hybrid=True)[0][1] == decoder.as_posix()

    decoder.unlink()
    store.ingest([corpus])  # without prune: its chunks stay, in both
    assert index_ids(store) == chunk_ids(store)
    store.ingest([corpus], prune=True)
    assert index_ids(store) == chunk_ids(store)
    assert all(
        c[1] != decoder.as_posix() for c in store.candidates("zanzibar_quux", limit=5, hybrid=True)
    )


def test_an_ingest_that_writes_nothing_marks_the_index_in_step_without_reading_chroma(
    tmp_path: Path, corpus: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = DocumentStore(path=tmp_path / "db")
    store.ingest([corpus])
    syncs: list[str] = []
    real = LexicalIndex.sync

    def sync(self: LexicalIndex, collection: object, version: str) -> tuple[int, int]:
        syncs.append(version)
        return real(self, collection, version)

    monkeypatch.setattr(LexicalIndex, "sync", sync)
    assert store.ingest([corpus]).chunks_added == 0
    assert syncs == [] and store.stats().lexical == "on"
    # Out of step before (a cut-short ingest): an ingest that writes nothing still syncs.
    index_for(store._backend).mark_dirty()
    store.ingest([corpus])
    assert len(syncs) == 1 and store.stats().lexical == "on"
    (corpus / "decoder.py").write_text("def zanzibar_quux():\n    return 1\n")
    store.ingest([corpus])  # in step before: the change alone is applied (no sync)
    assert len(syncs) == 1 and index_ids(store) == chunk_ids(store)
    assert store.stats().lexical == "on"


def test_a_cjk_question_finds_its_file(make_store: MakeStore, tmp_path: Path, corpus: Path) -> None:
    store = make_store()
    docs = write(tmp_path / "cjk", CJK)
    store.ingest([corpus, docs])
    for question, name in QUESTIONS.items():
        hybrid = store.search(question, max_tokens=1000, hybrid=True)
        assert hybrid.results[0].source == (docs / name).as_posix(), question
        dense = store.candidates(question, limit=50, hybrid=False)  # all of them
        scores = {c[1]: c[2] for c in dense}  # the vectors see nothing in common: a tie at 0
        assert scores[(docs / name).as_posix()] == 0.0, question


RARE_WORDS = [  # dense alone ranks another file first for these (checked below)
    ("where is NLCRE_crack used", "email/feedparser.py"),
    ("_splitparam semicolon", "email/message.py"),
]


@pytest.mark.evaluation
@pytest.mark.parametrize(("query", "expected"), RARE_WORDS)
def test_a_rare_identifier_ranks_its_file_first_where_vectors_alone_did_not(
    stdlib_store: DocumentStore, stdlib: Path, query: str, expected: str
) -> None:
    dense = stdlib_store.candidates(query, limit=1, hybrid=False)
    hybrid = stdlib_store.candidates(query, limit=1, hybrid=True)
    assert Path(dense[0][1]).relative_to(stdlib).as_posix() != expected
    assert Path(hybrid[0][1]).relative_to(stdlib).as_posix() == expected


def test_filters_hold_for_the_lexical_candidates(make_store: MakeStore, tmp_path: Path) -> None:
    store = make_store()
    a = write(tmp_path / "a", {"one.txt": CJK["tokyo.txt"]})
    b = write(tmp_path / "b", {"two.md": CJK["tokyo.txt"] + "\n(copy)\n"})
    store.ingest([a, b])
    question = next(iter(QUESTIONS))
    only_b = store.search(question, directory=str(b), max_tokens=1000, hybrid=True)
    assert [r.source for r in only_b.results] == [(b / "two.md").as_posix()]
    only_txt = store.search(question, file_type="txt", max_tokens=1000, hybrid=True)
    assert [r.source for r in only_txt.results] == [(a / "one.txt").as_posix()]


def test_a_store_without_an_index_ranks_by_vectors_until_the_next_ingest(
    tmp_path: Path, corpus: Path
) -> None:
    docs = write(tmp_path / "cjk", CJK)
    store = DocumentStore(path=tmp_path / "db")
    store.ingest([corpus, docs])
    question, name = next(iter(QUESTIONS.items()))
    index_for(store._backend).path.unlink()  # as a store built before the index existed
    assert store.stats().lexical.startswith("off until the next ingest")
    before = store.search(question, max_tokens=1000, hybrid=True)
    assert before.results[0].source != (docs / name).as_posix()
    report = store.ingest([corpus, docs])
    assert report.chunks_added == 0 and index_ids(store) == chunk_ids(store)
    assert store.stats().lexical == "on"
    assert (
        store.search(question, max_tokens=1000, hybrid=True).results[0].source
        == (docs / name).as_posix()
    )


@pytest.mark.server
def test_a_server_store_brings_its_cache_in_step_when_another_client_ingested(
    chroma_server: str, tmp_path: Path, corpus: Path
) -> None:
    name = f"lexical-{tmp_path.name}"
    docs = write(tmp_path / "cjk", {})
    one = DocumentStore(server=chroma_server, path=None, collection=name)
    one.ingest([corpus])
    other = DocumentStore(server=chroma_server, path=None, collection=name)
    cache = index_for(other._backend).path
    cache.unlink()  # the other client: a machine of its own, with no cache yet
    question, file = next(iter(QUESTIONS.items()))
    other.search(question, max_tokens=500, hybrid=True)
    assert cache.exists() and index_ids(other) == chunk_ids(other)
    write(docs, {file: CJK[file]})
    one.ingest([corpus, docs])
    found = other.search(question, max_tokens=1000, hybrid=True)
    assert found.results[0].source == (docs / file).as_posix()
    assert index_ids(other) == chunk_ids(other)


@pytest.mark.parametrize(
    ("flag", "hybrid"), [([], True), (["--hybrid"], True), (["--dense"], False)]
)
def test_the_command_line_flag_picks_the_ranking(
    tmp_path: Path, corpus: Path, monkeypatch: pytest.MonkeyPatch, flag: list[str], hybrid: bool
) -> None:
    from ragbudget_server.cli import app
    from typer.testing import CliRunner

    db = str(tmp_path / "db")
    assert CliRunner().invoke(app, ["ingest", str(corpus), "--db", db]).exit_code == 0
    asked: list[object] = []
    search, candidates = DocumentStore.search, DocumentStore.candidates

    def spy(real: Callable[..., object]) -> Callable[..., object]:
        def call(self: DocumentStore, query: str, **kwargs: object) -> object:
            asked.append(kwargs.get("hybrid"))
            return real(self, query, **kwargs)

        return call

    monkeypatch.setattr(DocumentStore, "search", spy(search))
    monkeypatch.setattr(DocumentStore, "candidates", spy(candidates))
    result = CliRunner().invoke(app, ["search", "decode", "--db", db, "--explain", *flag])
    assert result.exit_code == 0, result.output
    assert asked == [hybrid, hybrid]


@pytest.fixture
def syncs(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The versions each full sync of a lexical index was asked for."""
    seen: list[str] = []
    real = LexicalIndex.sync

    def sync(self: LexicalIndex, collection: object, version: str) -> tuple[int, int]:
        seen.append(version)
        return real(self, collection, version)

    monkeypatch.setattr(LexicalIndex, "sync", sync)
    return seen


def test_an_index_in_step_applies_an_ingest_s_own_writes_alone(
    tmp_path: Path, corpus: Path, syncs: list[str]
) -> None:
    store = DocumentStore(path=tmp_path / "db")
    store.ingest([corpus])
    assert len(syncs) == 1  # a new index: built from every id
    decoder = corpus / "decoder.py"
    decoder.write_text(decoder.read_text() + "\n\ndef zanzibar_quux():\n    return 1\n")
    write(corpus, {"fresh.py": "def brand_new_thing():\n    return 2\n"})
    store.ingest([corpus])
    assert index_ids(store) == chunk_ids(store)
    (corpus / "scanner.py").unlink()
    store.ingest([corpus], prune=True)
    assert index_ids(store) == chunk_ids(store)
    assert len(syncs) == 1 and store.stats().lexical == "on"
    assert store.candidates("zanzibar_quux", limit=1, hybrid=True)[0][1] == decoder.as_posix()


def test_an_index_out_of_step_with_chroma_is_synced_in_full(
    tmp_path: Path, corpus: Path, syncs: list[str]
) -> None:
    store = DocumentStore(path=tmp_path / "db")
    store.ingest([corpus])
    other = DocumentStore(path=tmp_path / "db")  # another writer: no version bump, no index
    dim = len(other.collection.get(limit=1, include=["embeddings"])["embeddings"][0])
    other.collection.add(
        ids=["ghost-0"], documents=["def ghost_words():\n    pass\n"], embeddings=[[0.5] * dim],
        metadatas=[{"source": (tmp_path / "ghost.py").as_posix(), "chunk_index": 0,
                    "chunk_count": 1}],
    )  # fmt: skip
    other.close()
    (corpus / "decoder.py").write_text("def zanzibar_quux():\n    return 1\n")
    store.ingest([corpus])  # the writes alone would leave the index one chunk short
    assert len(syncs) == 2 and "ghost-0" in index_ids(store)
    assert index_ids(store) == chunk_ids(store)
    # An index that no longer records the version it was in step with is synced in full too.
    index = index_for(store._backend)
    assert index.apply(store.collection, "next", "not-its-version", {}) is None
    assert index.state()["clean"] == "1" and index_ids(store) == chunk_ids(store)
