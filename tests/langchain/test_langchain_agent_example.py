"""examples/langchain_agent.py runs offline: a grep of 670 KB read within 4,000 tokens a page."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).parents[2] / "examples" / "langchain_agent.py"


def test_the_agent_example_pages_a_huge_grep_within_budget(
    capsys: pytest.CaptureFixture[str],
) -> None:
    result = runpy.run_path(str(EXAMPLE))["main"](pages=3)
    assert len(result["read"]) == 4
    assert all(n <= 4_000 for n in result["tokens"]), result["tokens"]
    bodies = [text.rsplit("\n\n[ragbudget:", 1)[0] for text in result["read"]]
    joined = "".join(bodies)
    assert result["whole"].startswith(joined) and len(result["whole"]) > 100_000
    assert "read_more(handle=" in capsys.readouterr().out
