"""examples/langchain_chain.py runs offline and its chain stays within the budget."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).parents[2] / "examples" / "langchain_chain.py"


def test_the_lcel_rag_chain_example(capsys: pytest.CaptureFixture[str]) -> None:
    main = runpy.run_path(str(EXAMPLE))["main"]
    result = main(max_tokens=1000)
    out = capsys.readouterr().out

    info = result["info"]
    assert info["truncated"] is True
    assert info["original_count"] == 20
    assert info["returned_count"] == len(result["sources"]) > 0
    assert result["context_tokens"] <= info["used_tokens"] <= 1000
    assert result["unbudgeted_tokens"] > 1000
    assert "argparse.py" in result["sources"] or "getopt.py" in result["sources"]
    assert "ragbudget_truncation event:" in out
    # The prompt the (parrot) model answered with holds every kept document and no other.
    for source in result["sources"]:
        assert f"[{source}]\n" in result["answer"]
    for dropped in info["dropped_ids"]:
        assert f"[{dropped}.py]" not in result["answer"]


def test_the_example_runs_as_a_script(capsys: pytest.CaptureFixture[str]) -> None:
    runpy.run_path(str(EXAMPLE), run_name="__main__")
    out = capsys.readouterr().out
    assert "The model saw" in out
    assert "Context:\n[" in out
