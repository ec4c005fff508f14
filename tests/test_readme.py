"""The README's quickstart snippets run as written (offline), and its first lines stay the two
commands a fresh machine needs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
RUNNABLE = re.compile(r"<!-- runnable -->\n```python\n(.*?)```", re.S)
SNIPPETS = RUNNABLE.findall(README)


def test_readme_marks_the_quickstarts_runnable() -> None:
    assert len(SNIPPETS) >= 3, "the core, LangChain and LlamaIndex quickstarts are runnable"


@pytest.mark.parametrize("code", SNIPPETS, ids=[s.splitlines()[-1][:40] for s in SNIPPETS])
def test_readme_snippet_runs(code: str, capsys: pytest.CaptureFixture[str]) -> None:
    exec(compile(code, "README.md", "exec"), {"__name__": "__readme__"})
    assert capsys.readouterr().out.strip(), "each quickstart prints what it shows"


def test_readme_opens_with_make_demo_and_make_test() -> None:
    first = re.search(r"```bash\n(.*?)```", README, re.S)
    assert first is not None
    assert README.index(first.group(0)) < 40
    commands = [line.split("#")[0].strip() for line in first.group(1).splitlines()]
    assert commands == ["make demo", "make test"]


def test_readme_is_a_front_page() -> None:
    assert len(README.splitlines()) <= 250
    for target in re.findall(r"\]\(((?!https?:)[^)#]+)", README):
        assert (ROOT / target).exists(), f"README links to {target}, which does not exist"


def test_core_quickstart_prints_what_its_comments_say(capsys: pytest.CaptureFixture[str]) -> None:
    namespace: dict[str, object] = {}
    exec(compile(SNIPPETS[0], "README.md", "exec"), namespace)
    ids, notice = capsys.readouterr().out.splitlines()
    assert ids.startswith("['a', 'b'] ")
    assert int(ids.split()[-1]) <= 1000
    assert notice == "[Showing 2 of 3 results (1,000-token budget). Use offset=2 to continue]"
