"""The client configs the docs print work as written.

Desktop apps start an MCP server with a minimal `PATH` (a bare `uv` or `uvx` is not found) and
in an arbitrary folder, so every command and path in a config is absolute; the server comes
from the `ragbudget-server` distribution (the old `ragbudget[mcp]` extra is gone). The last
test launches the checkout config the way a desktop app does and sends `initialize`.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import typer.main
from mcp_helpers import INITIALIZE
from ragbudget_server.mcp.command import register

ROOT = Path(__file__).resolve().parents[3]
CONFIG = ROOT / "examples" / "claude_desktop_config.json"
DOCS = [ROOT / "README.md", ROOT / "docs/mcp.md", ROOT / "docs/store.md",
        ROOT / "packages/server/README.md"]  # fmt: skip
UVX = ["--from", "ragbudget-server", "ragbudget", "serve"]
UV_RUN = ["run", "--directory", "--frozen", "--no-dev", "--package", "ragbudget-server",
          "ragbudget", "serve"]  # fmt: skip
"""The uv forms' arguments up to `serve` (`--directory` takes the checkout's absolute path)."""


def _serve_params(args: list[str]) -> dict[str, Any]:
    """`args` after `serve`, parsed as `ragbudget serve` parses them."""
    app = typer.Typer()
    register(app)

    @app.callback()
    def _root() -> None:
        """Root."""

    serve: Any = typer.main.get_command(app).commands["serve"]  # type: ignore[attr-defined]
    return dict(serve.make_context("serve", list(args)).params)


def _doc_servers() -> list[tuple[str, str, list[str]]]:
    """(where, command, args) of every Claude Desktop server the docs and the example show."""
    found = [
        (f"{CONFIG.name}:{name}", server["command"], server["args"])
        for name, server in json.loads(CONFIG.read_text())["mcpServers"].items()
    ]
    for doc in DOCS:
        where = doc.relative_to(ROOT).as_posix()
        for block in re.findall(r"```json\n(.*?)```", doc.read_text(encoding="utf-8"), re.S):
            data = json.loads(block)
            if isinstance(data, list):  # docs/mcp.md: the checkout form's args for uv
                found.append((f"{where}:args", "/absolute/path/to/uv", data))
                continue
            for name, server in data.get("mcpServers", {}).items():
                found.append((f"{where}:{name}", server["command"], server["args"]))
    return found


def _check_uv_form(where: str, command: str, args: list[str]) -> list[str]:
    """The arguments after `serve`, once the uv or uvx form before it is checked."""
    assert Path(command).is_absolute(), f"{where}: {command!r} is not found on a minimal PATH"
    if Path(command).name == "uvx":
        assert args[: len(UVX)] == UVX, where
        return args[len(UVX) :]
    assert Path(command).name == "uv", where
    assert args[:2] == UV_RUN[:2] and Path(args[2]).is_absolute(), f"{where}: --directory"
    assert args[3 : 3 + len(UV_RUN) - 2] == UV_RUN[2:], where
    return args[1 + len(UV_RUN) :]


def test_every_desktop_config_is_absolute_and_runs_ragbudget_server() -> None:
    servers = _doc_servers()
    assert {where.split(":")[0] for where, _, _ in servers} >= {
        CONFIG.name, "README.md", "docs/mcp.md", "packages/server/README.md"
    }  # fmt: skip
    for where, command, args in servers:
        params = _serve_params(_check_uv_form(where, command, args))
        assert params["db"] is not None and Path(params["db"]).is_absolute(), where
        assert all(Path(root).is_absolute() for root in params["allow_root"] or ()), where


def test_every_claude_code_command_is_absolute() -> None:
    """`claude mcp add ... -- "$(command -v uvx)" ...`: the shell writes the absolute paths."""
    commands = []
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8").replace("\\\n", " ")
        commands += re.findall(r"claude mcp add .*", text)
    assert len(commands) >= 5
    for line in commands:
        line = line.rstrip("`.")
        program = shlex.split(line.split(" -- ", 1)[1])
        assert program[0] in {"$(command -v uvx)", "$(command -v uv)"}, line
        if program[0] == "$(command -v uvx)":
            serve = program[1 + len(UVX) :]
            assert program[1 : 1 + len(UVX)] == UVX, line
        else:
            serve = program[2 + len(UV_RUN) :]
            assert program[1:4] == ["run", "--directory", "$PWD"], line
            assert program[4 : 2 + len(UV_RUN)] == UV_RUN[2:], line
        assert serve[serve.index("--db") + 1].startswith("$HOME/"), f"--db is relative: {line}"


def test_no_doc_names_the_old_extra() -> None:
    for doc in [*DOCS, ROOT / "docs/index.md", CONFIG]:
        assert "ragbudget[mcp]" not in doc.read_text(encoding="utf-8"), doc


@pytest.mark.process  # `uv run ... ragbudget serve`: uv, then the server
def test_checkout_config_starts_with_a_minimal_path_in_another_folder(tmp_path: Path) -> None:
    """examples/claude_desktop_config.json's checkout entry, as a desktop app launches it: the
    placeholders filled in, PATH=/usr/bin:/bin and nothing else, another working folder. The
    server answers `initialize` over stdio. (`--no-sync`: offline, the suite's environment is
    the checkout's; on a first launch uv installs the runtime dependencies from the index.)"""
    uv = shutil.which("uv")
    if uv is None or not (ROOT / ".venv" / "bin" / "ragbudget").exists():
        pytest.skip("needs uv on PATH and the checkout's .venv (make bootstrap)")
    server = json.loads(CONFIG.read_text())["mcpServers"]["ragbudget-checkout"]
    fill = {"/absolute/path/to/ragbudget": str(ROOT), "/absolute/path/to/.ragbudget":
            str(tmp_path / "db"), "/absolute/path/to/your/project": str(tmp_path / "project")}  # fmt: skip
    args = [fill.get(arg, arg) for arg in server["args"]]
    assert not any(arg.startswith("/absolute/path") for arg in args), args
    (tmp_path / "project").mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {"PATH": "/usr/bin:/bin"}
    if "SYSTEMROOT" in os.environ:  # pragma: no cover - Windows
        env["SYSTEMROOT"] = os.environ["SYSTEMROOT"]
    with (tmp_path / "stderr.log").open("wb") as stderr:
        proc = subprocess.Popen(
            [uv, "run", "--no-sync", *args[1:]],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, env=env, cwd=elsewhere,
        )  # fmt: skip
        try:
            assert proc.stdin is not None and proc.stdout is not None
            proc.stdin.write(json.dumps(INITIALIZE).encode() + b"\n")
            proc.stdin.flush()
            line = proc.stdout.readline()
        finally:  # the server ends at the end of its stdin, and uv with it (a SIGKILL to uv
            # would leave its child running)
            if proc.stdin is not None:
                proc.stdin.close()
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=30)
    log = (tmp_path / "stderr.log").read_text(errors="replace")
    assert line, f"the server did not answer; its stderr:\n{log}"
    answer = json.loads(line)
    assert answer["id"] == 1 and answer["result"]["serverInfo"]["name"] == "ragbudget", answer
