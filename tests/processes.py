"""Starting servers in subprocesses for the tests, on loopback only, always stopped after."""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import IO

import pytest

__all__ = ["free_port", "http_process", "server_env", "wait_for_port"]


def server_env() -> dict[str, str]:
    """Environment for server subprocesses (offline tiktoken files included)."""
    env = dict(os.environ)
    env["PYTHONUNBUFFERED"] = "1"
    env.pop("RAGBUDGET_AUTH_TOKEN", None)
    return env


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def wait_for_port(port: int, proc: subprocess.Popen[bytes], timeout: float = 120.0) -> None:
    """Return once `proc` listens on 127.0.0.1:`port`; fail the test if it exits or stalls."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
            pytest.fail(f"the server exited with {proc.returncode}: {err}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    pytest.fail(f"the server did not listen on {port} within {timeout}s")


@contextmanager
def http_process(
    command: Callable[[int], list[str]],
    env: dict[str, str],
    stderr: IO[bytes] | int = subprocess.PIPE,
) -> Iterator[str]:
    """`command(port)` started on a free loopback port and stopped after: yields its /mcp URL."""
    port = free_port()
    proc = subprocess.Popen(command(port), stdout=subprocess.DEVNULL, stderr=stderr, env=env)
    try:
        wait_for_port(port, proc)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        try:
            proc.communicate(timeout=15)
        except subprocess.TimeoutExpired:  # pragma: no cover
            proc.kill()
            proc.communicate()
