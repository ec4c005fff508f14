"""`pip install 'ragbudget[guard]'` in a fresh virtual environment: the core's and the guard's
wheels, built from this checkout, with their dependencies from the package index (or uv's
cache). No document store comes with them, and `ragbudget-guard` wraps a stdio server."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from guard_helpers import FAKE, texts
from mcp import Client, StdioServerParameters
from processes import server_env

pytestmark = [
    pytest.mark.process,
    pytest.mark.full,  # builds two wheels and installs ~60 packages: make test-full
    pytest.mark.timeout(900),
    pytest.mark.skipif(shutil.which("uv") is None, reason="needs uv to build and install"),
]

ROOT = Path(__file__).resolve().parents[2]


def _run(*args: str | Path, cwd: Path) -> str:
    done = subprocess.run(
        [str(a) for a in args], cwd=cwd, capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode == 0, f"{' '.join(map(str, args))}:\n{done.stdout}\n{done.stderr}"
    return done.stdout


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with `ragbudget[guard]` from the wheels: its `bin` folder."""
    tmp = tmp_path_factory.mktemp("guard-install")
    dist = tmp / "dist"
    for package in ("ragbudget", "ragbudget-guard"):
        _run("uv", "build", "--package", package, "--wheel", "--out-dir", dist, "-q", cwd=ROOT)
    (core,) = dist.glob("ragbudget-[0-9]*.whl")
    (guard,) = dist.glob("ragbudget_guard-*.whl")
    _run("uv", "venv", "-q", "--python", sys.executable, tmp / "venv", cwd=tmp)
    python = tmp / "venv" / "bin" / "python"
    # Outside the checkout: its uv settings (workspace sources) are not the user's.
    _run("uv", "pip", "install", "-q", "--python", python, f"ragbudget[guard] @ {core.as_uri()}",
         guard, cwd=tmp)  # fmt: skip
    return python.parent


def test_the_guard_installs_without_the_store(venv: Path) -> None:
    found = _run(
        venv / "python",
        "-c",
        "import importlib.util as u\n"
        "print([m for m in ('chromadb', 'ragbudget_server', 'ragbudget_guard', 'fastmcp')"
        " if u.find_spec(m)])",
        cwd=venv,
    )
    assert found.strip() == "['ragbudget_guard', 'fastmcp']"
    assert "Usage: ragbudget-guard" in _run(venv / "ragbudget-guard", "--help", cwd=venv)


async def test_the_installed_guard_wraps_a_stdio_server(venv: Path) -> None:
    params = StdioServerParameters(
        command=str(venv / "ragbudget-guard"),
        args=["--client", "codex", "--", sys.executable, str(FAKE)],
        env=server_env(),
    )
    async with Client(params) as client:
        tools = {tool.name for tool in (await client.list_tools()).tools}
        echoed = await client.call_tool("echo", {"text": "through the installed guard"})
    assert {"echo", "more"} <= tools
    assert texts(echoed) == ["through the installed guard"]
