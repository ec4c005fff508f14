"""The reference MCP servers from npm (filesystem, everything), installed once into `.cache/npm`.

Used by the guard's tests and `benchmarks/bench_guard.py`. `node_servers()` returns the folder
whose `node_modules/` holds both packages at `VERSION`, installing them (bounded by `TIMEOUT`)
when they are missing; it raises `NodeServersUnavailable` with the reason when node or npm is
missing or the registry cannot be reached. `inspector()` does the same for the MCP Inspector
(`INSPECTOR` at `INSPECTOR_VERSION`) in a folder of its own (`npm install --no-save` prunes
what it was not asked for, so two installs never share a folder).
"""

from __future__ import annotations

import fcntl
import json
import shutil
import subprocess
from pathlib import Path

__all__ = [
    "CACHE",
    "EVERYTHING",
    "FILESYSTEM",
    "INSPECTOR",
    "INSPECTOR_VERSION",
    "VERSION",
    "NodeServersUnavailable",
    "entry_point",
    "inspector",
    "node_servers",
    "npm_packages",
]

VERSION = "2026.8.31"
FILESYSTEM = "@modelcontextprotocol/server-filesystem"
EVERYTHING = "@modelcontextprotocol/server-everything"
CACHE = Path(__file__).resolve().parents[1] / ".cache" / "npm"
"""Under the repository's .gitignore'd .cache/: kept between runs."""
INSPECTOR = "@modelcontextprotocol/inspector"
INSPECTOR_VERSION = "2.12.0"
"""Pinned: `npm view @modelcontextprotocol/inspector version` when its test was written."""
TIMEOUT = 240.0
"""Seconds `npm install` may take."""


class NodeServersUnavailable(RuntimeError):
    """node or npm is missing, or the registry could not be reached (the message says which)."""


def _installed(folder: Path, package: str, version: str) -> bool:
    manifest = folder / "node_modules" / package / "package.json"
    try:
        return json.loads(manifest.read_text(encoding="utf-8"))["version"] == version
    except (OSError, ValueError, KeyError):
        return False


def node_servers(folder: Path = CACHE) -> Path:
    """`folder`, with both servers installed in its node_modules/."""
    return npm_packages(
        {FILESYSTEM: VERSION, EVERYTHING: VERSION}, folder, "the reference MCP servers"
    )


def inspector(folder: Path = CACHE / "inspector") -> Path:
    """`folder`, with the MCP Inspector installed in its node_modules/ (its CLI is
    `node_modules/.bin/mcp-inspector`)."""
    return npm_packages({INSPECTOR: INSPECTOR_VERSION}, folder, "the MCP Inspector")


def npm_packages(packages: dict[str, str], folder: Path, what: str) -> Path:
    """`folder`, with `packages` (name: version) installed in its node_modules/ (one install at
    a time: pytest workers wait for each other on a lock file); `what` names them in errors."""
    if all(_installed(folder, name, version) for name, version in packages.items()):
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / ".install.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _install(folder, packages, what)


def _install(folder: Path, packages: dict[str, str], what: str) -> Path:
    def done_already() -> bool:
        return all(_installed(folder, name, version) for name, version in packages.items())

    if done_already():
        return folder
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        msg = f"node and npm are needed to run {what}"
        raise NodeServersUnavailable(msg)
    command = [npm, "install", "--prefix", str(folder), "--no-audit", "--no-fund"]
    command += ["--no-save", *(f"{name}@{version}" for name, version in packages.items())]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        msg = f"npm install of {what} took over {TIMEOUT:g} s"
        raise NodeServersUnavailable(msg) from None
    if done.returncode != 0 or not done_already():
        tail = " ".join((done.stderr or done.stdout).split()[-40:])
        msg = f"npm could not install {what} from the registry: {tail}"
        raise NodeServersUnavailable(msg)
    return folder


def entry_point(folder: Path, package: str) -> Path:
    """The server's script (`dist/index.js`), to run with `node`."""
    return folder / "node_modules" / package / "dist" / "index.js"
