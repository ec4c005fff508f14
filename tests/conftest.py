"""Shared test setup: offline tiktoken files and small helpers every suite uses."""

from __future__ import annotations

import socket
import sysconfig
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from ragbudget import use_bundled_tiktoken_files

# tiktoken downloads its BPE files on first use; llama-index-core ships cl100k_base and
# o200k_base, which is what the tests use (the machine has no network).
use_bundled_tiktoken_files()

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
