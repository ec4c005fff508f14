"""examples/llamaindex_query.py runs offline and its query engine stays within the budget."""

from __future__ import annotations

import re
import runpy
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).parents[2] / "examples" / "llamaindex_query.py"


def test_the_query_engine_example(capsys: pytest.CaptureFixture[str]) -> None:
    main = runpy.run_path(str(EXAMPLE))["main"]
    result = main(max_tokens=400)
    out = capsys.readouterr().out

    info = result["info"]
    assert result["retrieved_tokens"] > 400  # the budget had work to do
    assert info.truncated
    assert info.original_count == 10
    assert info.returned_count == len(result["sent"]) > 0
    assert sum(tag["tokens"] for tag in result["sent"]) == info.used_tokens <= 400
    # the prompt's context is the kept nodes joined by blank lines: within a few tokens
    assert result["context_tokens"] <= info.used_tokens + 2 * len(result["sent"])
    assert result["modules"][0] == "json"  # the best match for a JSON question is kept
    assert [tag["rank"] for tag in result["sent"]] == list(range(len(result["sent"])))
    assert result["cut_tokens"] <= 120
    assert re.search(
        r"\n\[\.\.\. cut to fit a \d+-token limit; \d+ tokens in full\]$", result["cut_text"]
    )
    assert f"notice: [Showing {info.returned_count} of 10 nodes (400-token budget)" in out


def test_the_example_runs_as_a_script(capsys: pytest.CaptureFixture[str]) -> None:
    runpy.run_path(str(EXAMPLE), run_name="__main__")
    out = capsys.readouterr().out
    assert "within a 500-token budget" in out
    assert "with max_tokens=120: 1 node" in out
    assert "cut=True" in out
