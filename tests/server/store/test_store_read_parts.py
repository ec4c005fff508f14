"""A line alone over the budget (minified code) is read in parts that join back exactly."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ragbudget import TokenCounter
from ragbudget_server.cli import app
from ragbudget_server.store import DocumentStore, ReadResponse, StoreError
from typer.testing import CliRunner

WORDS = " ".join(f"w{i}" for i in range(3000))
MINIFIED = "var a={" + WORDS + "};\nconsole.log(a);\n"


@pytest.fixture(scope="module")
def minified(tmp_path_factory: pytest.TempPathFactory) -> tuple[DocumentStore, str, Path]:
    folder = tmp_path_factory.mktemp("minified")
    path = folder / "app.min.js"
    path.write_text(MINIFIED)
    store = DocumentStore(path=folder / "db")
    store.ingest([path])
    return store, path.as_posix(), folder / "db"


def _page_all(
    store: DocumentStore, source: str, budget: int, counter: TokenCounter
) -> list[ReadResponse]:
    pages, offset, char = [], 1, 0
    while len(pages) < 500:
        page = store.read(
            source, offset=offset, char_offset=char, max_tokens=budget, counter=counter
        )
        assert counter.count(page.to_text()) <= budget
        pages.append(page)
        if page.next_offset is None:
            return pages
        offset, char = page.next_offset, page.next_char_offset or 0
    raise AssertionError("paging did not end")


@settings(
    max_examples=8,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(budget=st.integers(min_value=300, max_value=3000))
def test_parts_join_back_to_the_document(
    minified: tuple[DocumentStore, str, Path], cl100k: TokenCounter, budget: int
) -> None:
    store, source, _ = minified
    pages = _page_all(store, source, budget, cl100k)
    assert len(pages) > 2
    assert "".join(p.text for p in pages if p.start_line == 1) == MINIFIED.split("\n")[0]
    assert [p.text for p in pages if p.start_line == 2] == ["console.log(a);"]
    first = pages[0]
    assert first.next_offset == 1 and first.next_char_offset == len(first.text)
    assert f"Use offset=1, char_offset={len(first.text)} to continue" in (first.notice or "")


def test_char_offset_errors_and_cli(minified: tuple[DocumentStore, str, Path]) -> None:
    store, source, db = minified
    with pytest.raises(
        StoreError, match=r"char_offset 99999 is past the end of line 2, which has 15"
    ):
        store.read(source, offset=2, char_offset=99999)
    with pytest.raises(StoreError, match="char_offset must be between 0 and"):
        store.read(source, char_offset=-1)
    result = CliRunner().invoke(
        app, ["read", source, "--db", str(db), "--char-offset", "7", "--max-tokens", "300"]
    )
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("w0 w1 w2")
    assert "--char-offset " in result.stderr.replace("\n", "")  # the flag, on a shell
