"""Shared test setup: offline tiktoken files, the kinds of test and their timeouts, and small
helpers every suite uses."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import sysconfig
import threading
from collections.abc import Iterator
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


@pytest.fixture(autouse=True)
def _processes_are_marked(request: pytest.FixtureRequest) -> Iterator[None]:
    """A test not marked `process` that starts one of ours (Python, `ragbudget`, `chroma`)
    fails and says to mark it: the marks stay true, so `-m "not process"` stays fast. Such a
    test's ingests plan every file in their own process (the planning helper is a process;
    `process` tests of many files get it)."""
    if request.node.get_closest_marker("process") is not None:
        yield
        return
    start = subprocess.Popen._execute_child  # type: ignore[attr-defined]

    def refuse(self: subprocess.Popen[Any], args: Any, *rest: Any, **kwargs: Any) -> Any:
        argv = [os.fspath(args)] if isinstance(args, (str, bytes, os.PathLike)) else args
        if any(str(arg).startswith(str(VENV_BIN)) for arg in argv):
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
