"""An `ingest` report that fits the server's ceiling, however many files it skipped."""

from __future__ import annotations

from ragbudget.counters import TokenCounter

from ragbudget_server.store import IngestReport

__all__ = ["fit_report"]


def _trim(report: IngestReport, keep: int) -> IngestReport:
    lists = {
        name: getattr(report, name)[:keep] for name in ("files_skipped", "files_removed", "errors")
    }
    listed = sum(len(v) for v in lists.values())
    total = len(report.files_skipped) + len(report.files_removed) + len(report.errors)
    return report.model_copy(update={**lists, "problems_omitted": total - listed})


def fit_report(report: IngestReport, budget: int, counter: TokenCounter) -> IngestReport:
    """`report`, or a copy listing only the first files of each list, whose JSON fits `budget`
    twice: a client gets it as the text block and again as structured content, and the server's
    guard budgets both together.

    The counts (`files_seen`, `files_ingested`, chunks) stay whole; `problems_omitted` says how
    many entries were left out. Never mutates `report`.
    """

    def size(answer: IngestReport) -> int:
        return 2 * counter.count(answer.model_dump_json())

    if size(report) <= budget:
        return report
    keep = max(len(report.files_skipped), len(report.files_removed), len(report.errors))
    trimmed = report
    while keep > 0:
        keep //= 2
        trimmed = _trim(report, keep)
        if size(trimmed) <= budget:
            break
    return trimmed
