"""What an install weighs: the server's runtime environment beside the development one.

The runtime one is what a desktop client's first launch of the checkout form builds
(`uv run --no-dev --package ragbudget-server --extra documents ...`): here
`uv sync --frozen --offline --no-dev --package ragbudget-server --extra documents` into a fresh
environment (from uv's cache: nothing is downloaded), then its `ragbudget --version` runs. The
development one is what `make bootstrap` builds (`uv sync --all-packages --frozen`, bytecode
compiled), into another fresh environment. Each: the distributions installed (`*.dist-info`
folders) and the disk it takes (`du`).

    uv run --all-packages --frozen python benchmarks/bench_install.py
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
import doc_figures

ROOT = Path(__file__).resolve().parents[1]
RUNTIME = ["--no-dev", "--package", "ragbudget-server", "--extra", "documents"]


def weigh(env: Path) -> dict[str, Any]:
    """The distributions in `env` and its size on disk in MB (`du -sm`)."""
    dists = sum(1 for _ in env.glob("lib/python*/site-packages/*.dist-info"))
    du = subprocess.run(["du", "-sm", str(env)], capture_output=True, text=True, check=True)
    return {"packages": dists, "mb": int(du.stdout.split()[0])}


def synced(env: Path, args: list[str], *, compiled: bool) -> None:
    """`uv sync --frozen --offline args` into the fresh environment `env`."""
    environ = {**os.environ, "UV_PROJECT_ENVIRONMENT": str(env)}
    environ.pop("UV_COMPILE_BYTECODE", None)  # a client's first launch compiles nothing
    if compiled:
        environ["UV_COMPILE_BYTECODE"] = "1"  # as the Makefile does
    uv = shutil.which("uv") or "uv"
    subprocess.run([uv, "sync", "--frozen", "--offline", "--quiet", *args], cwd=ROOT,
                   env=environ, check=True)  # fmt: skip


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="ragbudget-bench-install-") as tmp:
        env = Path(tmp) / "rt"
        try:
            synced(env, RUNTIME, compiled=False)
        except subprocess.CalledProcessError:
            print("skipped: uv could not install offline (make bootstrap fills its cache first)")
            return
        version = subprocess.run(
            [str(env / "bin" / "ragbudget"), "--version"], capture_output=True, text=True
        )
        runtime = weigh(env) | {"runs": version.returncode == 0, "version": version.stdout.strip()}
        synced(Path(tmp) / "dev", ["--all-packages"], compiled=True)
        development = weigh(Path(tmp) / "dev")
    print(f"runtime ({' '.join(RUNTIME)}): {runtime['packages']} packages, {runtime['mb']:,} MB; "
          f"ragbudget --version: {runtime['version'] or 'FAILED'}")  # fmt: skip
    print(f"development (make bootstrap): {development['packages']} packages, "
          f"{development['mb']:,} MB")  # fmt: skip
    doc_figures.save(
        __file__, {"runtime_args": RUNTIME, "runtime": runtime, "development": development}
    )


def table(results: dict[str, Any]) -> str:
    """docs/mcp.md's table: the runtime environment beside the development one."""
    runtime, dev = results["runtime"], results["development"]
    rows = [
        (f"runtime: `uv sync --no-dev {' '.join(results['runtime_args'][1:])}`, what a "
         "desktop client's first launch of the checkout form installs",
         runtime["packages"], f"{runtime['mb']:,} MB"),
        ("development: what `make bootstrap` builds (`uv sync --all-packages`, bytecode "
         "compiled)",
         dev["packages"], f"{dev['mb']:,} MB"),
    ]  # fmt: skip
    ran = "ran" if runtime["runs"] else "**failed**"
    return (
        doc_figures.grid(["environment", "packages", "on disk"], rows, "lrr")
        + f"\n\nThe runtime environment's `ragbudget --version` {ran}"
        + (f" (`{runtime['version']}`)." if runtime["version"] else ".")
    )


if __name__ == "__main__":
    main()
