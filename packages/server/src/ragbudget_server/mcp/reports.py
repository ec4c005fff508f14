"""Answers that list files (`ingest`'s report, `stats`), fitted whole to the client's walls.

Such an answer is a pydantic model sent as one text block, its compact JSON (no structured
content: every client's model then reads the same block, see `answers`). A long list of files
is shortened (the first entries kept, its count or `problems_omitted` saying the rest) until
the block fits `budget` units of the counter (a `ragbudget.limits.WalledCounter` for the
client's profile, so characters and bytes count too), rather than letting the server's guard
cut the JSON.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from pydantic import BaseModel
from ragbudget.counters import TokenCounter

from ragbudget_server.mcp.answers import serialized
from ragbudget_server.store import IngestReport

__all__ = ["answer_json", "answer_units", "fit_listing", "fit_report"]

M = TypeVar("M", bound=BaseModel)


def answer_json(answer: BaseModel) -> str:
    """The text block a client gets for `answer`: its compact JSON."""
    return serialized(answer.model_dump(mode="json"))


def answer_units(answer: BaseModel, counter: TokenCounter) -> int:
    """Units of `answer`'s text block."""
    return counter.count(answer_json(answer))


def fit_listing(
    answer: M, longest: int, shorten: Callable[[M, int], M], budget: int, counter: TokenCounter
) -> M:
    """`answer`, or `shorten(answer, keep)` for the largest `keep` below `longest` (the longest
    list's length) whose text block fits `budget`; `shorten(answer, 0)`
    when none does (the guard's to cut then). Never mutates `answer`."""
    if answer_units(answer, counter) <= budget:
        return answer
    low, high = 0, longest - 1  # every keep above `high` is over the budget
    while low < high:
        keep = (low + high + 1) // 2
        if answer_units(shorten(answer, keep), counter) <= budget:
            low = keep
        else:
            high = keep - 1
    return shorten(answer, low)


def _trim(report: IngestReport, keep: int) -> IngestReport:
    lists = {
        name: getattr(report, name)[:keep] for name in ("files_skipped", "files_removed", "errors")
    }
    listed = sum(len(v) for v in lists.values())
    total = len(report.files_skipped) + len(report.files_removed) + len(report.errors)
    return report.model_copy(update={**lists, "problems_omitted": total - listed})


def fit_report(report: IngestReport, budget: int, counter: TokenCounter) -> IngestReport:
    """`report`, or a copy listing only the first files of each list, whose JSON fits `budget`
    (by `counter`).

    The counts (`files_seen`, `files_ingested`, chunks) stay whole; `problems_omitted` says how
    many entries were left out. Never mutates `report`.
    """
    longest = max(len(report.files_skipped), len(report.files_removed), len(report.errors))
    return fit_listing(report, longest, _trim, budget, counter)
