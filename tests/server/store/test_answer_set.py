"""The answer-in-context benchmark's scorer and held-out sets (`benchmarks/_answer_set.py`).

The scorer must fail a shown text that misses the passage, cuts it, or shows it under another
file; each set must still match the stdlib it is run on, and the second set must share no file
with the first (it checks the tuning done on the first).
"""

from __future__ import annotations

import importlib.util
import sys
import sysconfig
from pathlib import Path
from types import ModuleType

import pytest

BENCHMARKS = Path(__file__).parents[3] / "benchmarks"
STDLIB = Path(sysconfig.get_paths()["stdlib"])


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("_answer_set", BENCHMARKS / "_answer_set.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("_answer_set", module)
    spec.loader.exec_module(module)
    return module


answer_set = _load()


@pytest.fixture
def item() -> object:
    return answer_set.Question(
        q="split a command line the way a shell does",
        file="shlex.py",
        passage="Split the string *s* using shell-like syntax",
    )


@pytest.mark.evaluation
def test_scorer_counts_the_passage_under_its_own_file(item: object, tmp_path: Path) -> None:
    source = str(tmp_path / "shlex.py")
    shown = "def split(s):\n    Split the string *s*\n        using   shell-like syntax,\n"
    assert answer_set.answered(item, [(source, shown)], tmp_path)


@pytest.mark.evaluation
@pytest.mark.parametrize(
    ("file", "text"),
    [
        ("shlex.py", "def split(s):\n    Split the string *s* using"),  # cut mid-passage
        ("shlex.py", "def quote(s):\n    Return a shell-escaped version"),  # another passage
        ("glob.py", "Split the string *s* using shell-like syntax"),  # the passage, wrong file
        ("shlex.py", ""),
    ],
)
def test_scorer_fails_a_wrong_answer(item: object, tmp_path: Path, file: str, text: str) -> None:
    assert not answer_set.answered(item, [(str(tmp_path / file), text)], tmp_path)
    assert not answer_set.answered(item, [], tmp_path)


@pytest.mark.evaluation
def test_file_rank_counts_distinct_files(item: object, tmp_path: Path) -> None:
    ranked = [str(tmp_path / f) for f in ("a.py", "a.py", "b.py", "shlex.py", "a.py")]
    assert answer_set.file_rank(item, ranked, tmp_path) == 3
    assert answer_set.file_rank(item, ranked[:3], tmp_path) is None
    assert answer_set.reciprocal_rank(None) == 0.0


@pytest.mark.evaluation
@pytest.mark.parametrize("name", ["a", "b"])
def test_held_out_set_matches_the_stdlib(name: str) -> None:
    answers = answer_set.load(answer_set.set_path(name))
    assert len(answers.questions) >= 30
    assert len({q.file.split("/")[0] for q in answers.questions if q.file.endswith(".py")}) >= 20
    assert any(not q.q.isascii() for q in answers.questions)  # CJK questions over CJK text
    assert answer_set.missing_passages(answers, STDLIB) == []
    for q in answers.questions:  # plain words: the question does not quote its answer
        assert answer_set.squash(q.passage).lower() not in q.q.lower()


@pytest.mark.evaluation
def test_second_set_shares_no_file_or_question_with_the_first() -> None:
    first, second = (answer_set.load(answer_set.set_path(n)) for n in ("a", "b"))
    assert answer_set.load() == first  # the default is the set the weights were tuned on
    modules = [{c.split("/")[0] for c in s.corpus if c.endswith(".py")} for s in (first, second)]
    assert not modules[0] & modules[1]
    assert not set(first.corpus) & set(second.corpus)
    assert not {q.q for q in first.questions} & {q.q for q in second.questions}


@pytest.mark.evaluation
def test_set_path_names_the_argument() -> None:
    with pytest.raises(ValueError, match=r"--set must be one of a, b, got 'c'"):
        answer_set.set_path("c")


@pytest.mark.evaluation
def test_missing_passages_names_a_stale_entry(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text("nothing here\n", encoding="utf-8")
    stale = answer_set.AnswerSet(
        corpus=["m.py"], questions=[answer_set.Question("q", "m.py", "the answer")]
    )
    assert answer_set.missing_passages(stale, tmp_path) == [
        "'q': passage 'the answer' is not in m.py"
    ]
