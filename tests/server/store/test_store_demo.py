"""`make demo` runs offline and tells the truth about budgets, continuations and pages."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).parents[3] / "examples"


def test_store_demo(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    main = runpy.run_path(str(EXAMPLES / "demo.py"))["main"]
    shown = main(tmp_path / "db", packages=("json",))
    out = capsys.readouterr().out
    counter = shown["counter"]
    first, second, tiny = shown["first"], shown["second"], shown["tiny"]
    assert counter.count(first.to_text()) <= 2000 and first.truncated
    assert second.results[0].id not in {r.id for r in first.results}
    assert f"Use offset={first.next_offset} to continue" in out
    assert counter.count(tiny.to_text()) <= 300 and tiny.results[0].cut
    pages = shown["pages"]
    assert [p.start_line for p in pages[1:]] == [p.next_offset for p in pages[:-1]]
    assert all(counter.count(p.to_text()) <= 1500 for p in pages)
    assert "again: " in out and " 0 chunks written" in out
