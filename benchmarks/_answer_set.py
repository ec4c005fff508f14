"""The held-out answer sets of `bench_answer_in_context.py` and their scorer (no store needed).

`data/answer_questions.json` (set `a`) and `data/answer_questions_b.json` (set `b`, written
after the evidence weights were tuned on `a`, over other modules) hold questions in plain words,
each with the file that answers it (relative to the stdlib folder) and a short verbatim passage
of that file. A question counts as
answered in context when one shown piece comes from that file and holds the passage, whitespace
aside (a cut that drops part of the passage, or the passage shown under another file, does not
count). `tests/server/store/test_answer_set.py` checks this scorer and the set itself.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

DATA = Path(__file__).parent / "data" / "answer_questions.json"
SETS = {"a": DATA, "b": DATA.with_name("answer_questions_b.json")}
"""The held-out sets by name (`--set`): `a` is the one the evidence weights were tuned on."""

Pieces = list[tuple[str, str]]
"""What a strategy shows the model: (source path, text shown) per result."""

_SPACE = re.compile(r"\s+")


def squash(text: str) -> str:
    """`text` with every run of whitespace made one space (line breaks and indents aside)."""
    return _SPACE.sub(" ", text).strip()


@dataclass(frozen=True)
class Question:
    """One held-out question and where its answer is."""

    q: str
    file: str
    """The answering file, relative to the corpus root."""
    passage: str
    """A verbatim passage of `file` that answers the question."""


@dataclass(frozen=True)
class AnswerSet:
    corpus: list[str]
    """Files and folders to ingest, relative to the corpus root."""
    questions: list[Question]


def load(path: Path = DATA) -> AnswerSet:
    """The answer set at `path` (a ValueError naming the entry when one is malformed)."""
    raw = json.loads(path.read_text(encoding="utf-8"))
    questions = []
    for n, entry in enumerate(raw["questions"]):
        if not all(
            isinstance(entry.get(k), str) and entry[k].strip() for k in ("q", "file", "passage")
        ):
            msg = f"{path}: question {n} needs non-empty 'q', 'file' and 'passage', got {entry!r}"
            raise ValueError(msg)
        questions.append(Question(entry["q"], entry["file"], entry["passage"]))
    return AnswerSet(corpus=list(raw["corpus"]), questions=questions)


def set_path(name: str) -> Path:
    """The file of the answer set called `name` (a ValueError naming `--set` when unknown)."""
    if name not in SETS:
        msg = f"--set must be one of {', '.join(SETS)}, got {name!r}"
        raise ValueError(msg)
    return SETS[name]


def missing_passages(answers: AnswerSet, root: Path) -> list[str]:
    """The questions whose passage is not in their file under `root` (or whose file is not
    ingested): a set that no longer matches the sources it is run on."""
    out = []
    for item in answers.questions:
        path = root / item.file
        in_corpus = any(
            item.file == c or item.file.startswith(c.rstrip("/") + "/") for c in answers.corpus
        )
        if not in_corpus or not path.is_file():
            out.append(f"{item.q!r}: {item.file} is not in the corpus")
        elif squash(item.passage) not in squash(path.read_text(encoding="utf-8")):
            out.append(f"{item.q!r}: passage {item.passage!r} is not in {item.file}")
    return out


def answered(item: Question, pieces: Pieces, root: Path) -> bool:
    """True when one shown piece comes from the answering file and holds the whole passage."""
    want = (root / item.file).resolve()
    passage = squash(item.passage)
    return any(
        Path(source).resolve() == want and passage in squash(text) for source, text in pieces
    )


def file_rank(item: Question, sources: list[str], root: Path) -> int | None:
    """The 1-based rank of the answering file among the distinct files of a chunk ranking
    (`sources`: each ranked chunk's file, best first); None when it is not there."""
    want = (root / item.file).resolve()
    seen: list[Path] = []
    for source in sources:
        path = Path(source).resolve()
        if path not in seen:
            seen.append(path)
            if path == want:
                return len(seen)
    return None


def reciprocal_rank(rank: int | None) -> float:
    return 0.0 if rank is None else 1.0 / rank
