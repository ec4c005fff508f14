"""Every measured table in the README and docs is written from a committed benchmark run
(`benchmarks/results/*.json`), by that benchmark's own renderer (benchmarks/doc_figures.py):
no benchmark runs here, the blocks are rendered again and compared."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _doc_figures() -> ModuleType:
    spec = importlib.util.spec_from_file_location("doc_figures", ROOT / "benchmarks/doc_figures.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["doc_figures"] = module
    spec.loader.exec_module(module)
    return module


FIGURES = _doc_figures()
PAGES = {doc.relative_to(ROOT).as_posix(): doc.read_text(encoding="utf-8") for doc in FIGURES.DOCS}
BLOCKS = [(page, m) for page, text in PAGES.items() for m in FIGURES.blocks(text)]


def test_every_marker_is_closed() -> None:
    for page, text in PAGES.items():
        closed = [m["name"] for m in FIGURES.blocks(text)]
        assert FIGURES.names(text) == closed, f"{page}: a figures marker without its end"


@pytest.mark.parametrize(("page", "block"), BLOCKS, ids=[f"{p}:{m['name']}" for p, m in BLOCKS])
def test_block_is_its_benchmarks_table(page: str, block: object) -> None:
    name = block["name"]  # type: ignore[index]
    key = name.partition("/")[0]
    assert (FIGURES.RESULTS / f"{key}.json").exists(), f"{page}: {name} has no results JSON"
    assert block["body"] == FIGURES.render(name), (  # type: ignore[index]
        f"{page}: the {name} block differs from its JSON: run "
        "uv run --all-packages --frozen python benchmarks/doc_figures.py"
    )


def test_every_result_is_shown() -> None:
    shown = {m["name"].partition("/")[0] for _, m in BLOCKS}
    results = {path.stem for path in FIGURES.RESULTS.glob("*.json")}
    assert results - shown == set(), "results JSON that no doc block shows"


def test_every_result_records_its_run() -> None:
    for path in FIGURES.RESULTS.glob("*.json"):
        data = FIGURES.load(path.stem)
        assert data["command"].startswith("uv run "), path.name
        assert data["date"] and data["cores"] and len(data["load_average"]) == 3, path.name
        assert (FIGURES.HERE / f"{data['bench']}.py").exists(), path.name


def test_a_stale_block_is_written_afresh_and_a_missing_run_is_named() -> None:
    name = BLOCKS[0][1]["name"]
    stale = f"before\n<!-- figures:{name} -->\nold figures\n<!-- /figures:{name} -->\nafter\n"
    fresh = FIGURES.rewritten(stale)
    assert (
        fresh
        == f"before\n<!-- figures:{name} -->\n{FIGURES.render(name)}<!-- /figures:{name} -->\nafter\n"
    )
    unknown = "<!-- figures:bench_nothing -->\n<!-- /figures:bench_nothing -->\n"
    with pytest.raises(FIGURES.NoResults, match="bench_nothing"):
        FIGURES.rewritten(unknown)
    missing: list[str] = []
    assert FIGURES.rewritten(unknown, missing) == unknown
    assert missing == ["no benchmarks/results/bench_nothing.json: run benchmarks/bench_nothing.py"]
    unclosed = f"<!-- figures:{name} -->\ntext\n"
    assert FIGURES.names(unclosed) == [name] and not list(FIGURES.blocks(unclosed))
