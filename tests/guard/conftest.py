"""Fixtures for `ragbudget guard`: the reference servers from npm, installed once."""

from __future__ import annotations

from pathlib import Path

import pytest
from node_servers import NodeServersUnavailable, node_servers

pytest.importorskip("fastmcp")


@pytest.fixture(scope="session")
def npm_servers() -> Path:
    """The folder whose node_modules/ holds the reference servers (installed once)."""
    try:
        return node_servers()
    except NodeServersUnavailable as exc:
        pytest.skip(str(exc))
