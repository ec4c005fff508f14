"""`make demo` runs offline and tells the truth about budgets, continuations and pages."""

from __future__ import annotations

import re
import runpy
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).parents[3] / "examples"


@pytest.mark.process
def test_store_demo(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    demo = runpy.run_path(str(EXAMPLES / "demo.py"))
    shown = demo["main"](tmp_path / "db", packages=("json",))
    out = capsys.readouterr().out
    counter = shown["counter"]
    first, second, tiny = shown["first"], shown["second"], shown["tiny"]
    assert counter.count(first.to_text()) <= 2000 and first.truncated
    assert second.results[0].id not in {r.id for r in first.results}
    assert f'Use cursor="{first.next_cursor}" to continue' in out
    assert counter.count(tiny.to_text()) <= 300 and tiny.results[0].cut
    pages = shown["pages"]
    assert [p.start_line for p in pages[1:]] == [p.next_offset for p in pages[:-1]]
    assert all(counter.count(p.to_text()) <= 1500 for p in pages)
    assert "again: " in out and " 0 chunks written" in out
    # Every block that marks a result CUT says why, in a line under it.
    blocks = out.split("\n== ")[1:]
    cut_blocks = [b for b in blocks if re.search(r"tokens  CUT$", b, re.M)]
    assert cut_blocks
    for block in cut_blocks:
        assert re.search(
            r"^   CUT: the [\d,]+-token budget could not hold these results whole", block, re.M
        ), block

    # Part 3: the one install command, then `ragbudget --version` and a search through the
    # console script, on the demo's store; a result the CLI cuts is explained too.
    version, search = demo["run_command"](tmp_path / "db", max_tokens=300)
    out = capsys.readouterr().out
    assert "pip install ragbudget-server" in out
    assert version.returncode == 0 and re.fullmatch(r"ragbudget \d+\.\d+\.\d+\S*\n", version.stdout)
    assert search.returncode == 0, search.stderr
    assert "Use --cursor " in search.stdout
    assert "(cut to fit)" in search.stdout
    assert "(cut to fit): the 300-token budget could not hold these results whole" in out
