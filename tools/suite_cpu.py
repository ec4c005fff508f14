"""A pytest plugin that prints the CPU seconds each test file took, its processes included.

Wall times (`--durations`) follow the machine's load; CPU times much less so, which makes them
the figure to compare two versions of the suite by. Each test's CPU time is its worker's
(user + system) and that of the processes it started and waited for; a process a fixture
keeps for a module or a session counts when it is stopped.

    PYTHONPATH=tools .venv/bin/pytest -q -p no:cacheprovider -n 2 --dist loadfile -p suite_cpu

prints the 30 costliest files and the total once the run ends (`SUITE_CPU_TOP` sets how many).
"""

from __future__ import annotations

import json
import os
import resource
import tempfile
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

_spent: Counter[str] = Counter()
_FOLDER = "SUITE_CPU_FOLDER"


def _cpu() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    waited = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + waited.ru_utime + waited.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    start = _cpu()
    yield
    _spent[item.nodeid.split("::")[0]] += _cpu() - start


def pytest_configure(config: pytest.Config) -> None:
    if not hasattr(config, "workerinput") and _FOLDER not in os.environ:
        os.environ[_FOLDER] = tempfile.mkdtemp(prefix="suite-cpu-")  # the workers inherit it


def pytest_sessionfinish(session: pytest.Session) -> None:
    folder = Path(os.environ[_FOLDER])
    worker: Any = getattr(session.config, "workerinput", {}).get("workerid", "main")
    (folder / f"{worker}.json").write_text(json.dumps(_spent))


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if hasattr(terminalreporter.config, "workerinput"):
        return
    spent: Counter[str] = Counter()
    for part in Path(os.environ[_FOLDER]).glob("*.json"):
        spent.update(json.loads(part.read_text()))
    top = int(os.environ.get("SUITE_CPU_TOP", "30"))
    terminalreporter.write_sep("=", f"CPU seconds per test file (top {top})")
    for name, seconds in spent.most_common(top):
        terminalreporter.write_line(f"{seconds:7.1f}  {name}")
    terminalreporter.write_line(f"{sum(spent.values()):7.1f}  in all ({len(spent)} files)")
