"""The core's runnable example runs and tells the truth about what it kept."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).parents[2] / "examples"


def test_fit_stdlib_example(capsys: pytest.CaptureFixture[str]) -> None:
    main = runpy.run_path(str(EXAMPLES / "fit_stdlib.py"))["main"]
    info = main(budget=8192)
    out = capsys.readouterr().out
    assert info["truncated"] is True
    assert info["used_tokens"] <= 8192
    assert "pydoc_data/topics.py" in info["cut_ids"]
    assert "Use offset=" in out
    assert "Truncation report:" in out
    assert "(cut): the file is longer than the 2,048 tokens one chunk may take" in out
