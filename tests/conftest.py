"""Shared test setup: offline tiktoken files, the kinds of test and their timeouts, and small
helpers every suite uses."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import sysconfig
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from ragbudget import use_bundled_tiktoken_files

# tiktoken downloads its BPE files on first use; llama-index-core ships cl100k_base and
# o200k_base, which is what the tests use (the machine has no network).
use_bundled_tiktoken_files()

# Hypothesis: no per-example deadline and no "too slow" health check anywhere, so a loaded
# machine cannot fail a property. With CI set (.ci/run sets it), Hypothesis's "ci" profile also
# derandomizes: the examples are the same on every run; a local run keeps drawing new ones.
for _name in ("default", "ci"):
    settings.register_profile(
        _name,
        settings.get_profile(_name),
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow],
    )
settings.load_profile("ci" if "CI" in os.environ else "default")

LONG_TIMEOUT = 180
"""Seconds a `process` or `slow` test may take; every other test has pytest's `timeout` (60 s,
in pyproject.toml). On a 2-core machine the slowest took 8 s and 4 s idle, and 58 s and 34 s
with the load average at 8. A test's own `@pytest.mark.timeout(N)` wins over both."""

VENV_BIN = Path(sys.executable).parent
"""Where the processes the tests start live: this Python, `ragbudget`, `chroma`."""

UV = ("uv", "uvx")
"""Launchers that start them too (`uv run ... ragbudget serve`, as a desktop app's config)."""

KINDS = ("process", "slow", "server", "node", "evaluation")
"""The marks that say what a test costs; a test with none of them is a fast unit test."""

CPU_LIMIT = 5.0
"""CPU seconds an unmarked test may spend (its call and its function-scoped fixtures' setup,
not a module's or the session's), else it fails (`pytest_runtest_call` below). CPU time, not
wall time: `time.process_time()` of the worker, which the machine's load moves far less (a
loaded machine delays a test more than it makes it compute; shared caches make its seconds
dearer, up to twice as many from one loaded run to another here), where it multiplies wall
time. So that the outcome does not depend on the load, the costliest unmarked tests take under
2 s (a 2-core machine, load average 3 to 5), under half the limit; a test over ~2 s is marked
`slow`."""

_CPU_SPENT = pytest.StashKey[float]()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests that use the Chroma server are `server` and `process` tests; `process` and `slow`
    tests get the long timeout."""
    for item in items:
        fixtures = getattr(item, "fixturenames", ())
        if "chroma_server" in fixtures and item.get_closest_marker("server") is None:
            item.add_marker(pytest.mark.server)
        if item.get_closest_marker("server") is not None:
            item.add_marker(pytest.mark.process)
        long = item.get_closest_marker("process") or item.get_closest_marker("slow")
        if long is not None and item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(LONG_TIMEOUT))


def _unmarked(item: pytest.Item) -> bool:
    return not any(item.get_closest_marker(kind) is not None for kind in KINDS)


class _Cpu:
    """This worker's CPU accounts for the guard below."""

    shared = 0.0
    """CPU seconds spent setting up fixtures wider than a function (a module's store, the
    session's server): shared by many tests, they count for none of them, whichever asks
    first (`request.getfixturevalue` in a test's body included)."""
    open = 0
    """Measured spans open: a test's call and its function-scoped fixtures' setups, which nest
    (`request.getfixturevalue` in one); only the outermost counts."""


@contextmanager
def _spent_by(item: pytest.Item) -> Iterator[None]:
    """Adds the CPU time of the block, less what wider fixtures' setups took in it, to what
    `item` spent (the outermost block only)."""
    outermost = _Cpu.open == 0
    _Cpu.open += 1
    start, shared = time.process_time(), _Cpu.shared
    try:
        yield
    finally:
        _Cpu.open -= 1
        if outermost:
            spent = time.process_time() - start - (_Cpu.shared - shared)
            item.stash[_CPU_SPENT] = item.stash.get(_CPU_SPENT, 0.0) + spent


@pytest.hookimpl(wrapper=True)
def pytest_fixture_setup(fixturedef: Any, request: pytest.FixtureRequest) -> Iterator[Any]:
    """A function-scoped fixture's setup is its test's CPU time; a wider one's is shared."""
    if fixturedef.scope == "function" and isinstance(request.node, pytest.Item):
        with _spent_by(request.node):
            return (yield)
    start, shared = time.process_time(), _Cpu.shared
    try:
        return (yield)
    finally:
        _Cpu.shared = shared + time.process_time() - start  # its nested wider setups once


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    """A test with none of the marks `KINDS` that passes but spent over `CPU_LIMIT` CPU
    seconds fails and says to mark it `slow` or make it smaller: `make test` stays within its
    time on a 2-core machine, and `-m "not process and not slow"` stays a fast loop. A tracer
    (coverage, a debugger) multiplies CPU time: no guard under one."""
    with _spent_by(item):
        result = yield  # a failing test's own error is its report
    spent = item.stash.get(_CPU_SPENT, 0.0)
    if spent > CPU_LIMIT and _unmarked(item) and sys.gettrace() is None:
        pytest.fail(
            f"{item.nodeid} took {spent:.1f} s of CPU, over the {CPU_LIMIT:.0f} s a test "
            "without a mark of its kind may take: mark it @pytest.mark.slow, or make it smaller",
            pytrace=False,
        )
    return result


@pytest.fixture(autouse=True)
def _processes_are_marked(request: pytest.FixtureRequest) -> Iterator[None]:
    """A test not marked `process` that starts one of ours (Python, `ragbudget`, `chroma`, or
    `uv`, which starts them) fails and says to mark it: the marks stay true, so
    `-m "not process"` stays fast. Such a test's ingests plan every file in their own process
    (the planning helper is a process; `process` tests of many files get it)."""
    if request.node.get_closest_marker("process") is not None:
        yield
        return
    start = subprocess.Popen._execute_child  # type: ignore[attr-defined]

    def refuse(self: subprocess.Popen[Any], args: Any, *rest: Any, **kwargs: Any) -> Any:
        argv = [os.fspath(args)] if isinstance(args, (str, bytes, os.PathLike)) else args
        ours = any(str(arg).startswith(str(VENV_BIN)) for arg in argv)
        if ours or (argv and Path(os.fsdecode(argv[0])).name in UV):
            pytest.fail(
                f"{request.node.nodeid} starts a process ({' '.join(map(str, argv))}): "
                "mark it @pytest.mark.process",
                pytrace=False,
            )
        return start(self, args, *rest, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(subprocess.Popen, "_execute_child", refuse)
        patch.setattr("ragbudget_server.store.planner.MIN_FILES", sys.maxsize)
        yield


STDLIB = Path(sysconfig.get_paths()["stdlib"])


@pytest.fixture(scope="session")
def stdlib() -> Path:
    """The Python standard library's sources: real public text on every machine."""
    return STDLIB


@pytest.fixture(scope="session")
def cl100k():  # type: ignore[no-untyped-def]
    """An exact counter (tiktoken cl100k_base, offline)."""
    from ragbudget import get_counter

    return get_counter("tiktoken:cl100k_base")


@pytest.fixture
def silent_server() -> Iterator[str]:
    """The URL of a server on 127.0.0.1 that accepts connections and never answers."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    listener.settimeout(0.1)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            held.append(conn)  # kept open, never read from nor written to

    thread = threading.Thread(target=accept, name="silent-server", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        stop.set()
        thread.join()
        for conn in held:
            conn.close()
        listener.close()
