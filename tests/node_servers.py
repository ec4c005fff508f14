"""The reference MCP servers from npm (filesystem, everything), installed once into `.cache/npm`.

Used by the guard's tests and `benchmarks/bench_guard.py`. `node_servers()` returns the folder
whose `node_modules/` holds both packages at `VERSION`, installing them (bounded by `TIMEOUT`)
when they are missing; it raises `NodeServersUnavailable` with the reason when node or npm is
missing or the registry cannot be reached.
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
    "VERSION",
    "NodeServersUnavailable",
    "entry_point",
    "node_servers",
]

VERSION = "2026.8.31"
FILESYSTEM = "@modelcontextprotocol/server-filesystem"
EVERYTHING = "@modelcontextprotocol/server-everything"
CACHE = Path(__file__).resolve().parents[1] / ".cache" / "npm"
"""Under the repository's .gitignore'd .cache/: kept between runs."""
TIMEOUT = 240.0
"""Seconds `npm install` may take."""


class NodeServersUnavailable(RuntimeError):
    """node or npm is missing, or the registry could not be reached (the message says which)."""


def _installed(folder: Path, package: str) -> bool:
    manifest = folder / "node_modules" / package / "package.json"
    try:
        return json.loads(manifest.read_text(encoding="utf-8"))["version"] == VERSION
    except (OSError, ValueError, KeyError):
        return False


def node_servers(folder: Path = CACHE) -> Path:
    """`folder`, with both servers installed in its node_modules/ (one install at a time:
    pytest workers wait for each other on a lock file)."""
    packages = (FILESYSTEM, EVERYTHING)
    if all(_installed(folder, package) for package in packages):
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / ".install.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _install(folder, packages)


def _install(folder: Path, packages: tuple[str, ...]) -> Path:
    if all(_installed(folder, package) for package in packages):
        return folder
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        msg = "node and npm are needed to run the reference MCP servers"
        raise NodeServersUnavailable(msg)
    command = [npm, "install", "--prefix", str(folder), "--no-audit", "--no-fund"]
    command += ["--no-save", *(f"{package}@{VERSION}" for package in packages)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        msg = f"npm install of the reference MCP servers took over {TIMEOUT:g} s"
        raise NodeServersUnavailable(msg) from None
    if done.returncode != 0 or not all(_installed(folder, package) for package in packages):
        tail = " ".join((done.stderr or done.stdout).split()[-40:])
        msg = f"npm could not install the reference MCP servers from the registry: {tail}"
        raise NodeServersUnavailable(msg)
    return folder


def entry_point(folder: Path, package: str) -> Path:
    """The server's script (`dist/index.js`), to run with `node`."""
    return folder / "node_modules" / package / "dist" / "index.js"
