"""The `ragbudget` command's edges: one-line errors off a terminal, a missing `cli` extra."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

RAGBUDGET = Path(sys.executable).with_name("ragbudget")

BLOCK_CLI_EXTRA = """
import sys

class NoCliExtra:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("typer", "rich"):
            raise ImportError(f"No module named {name!r}")
        return None

sys.meta_path.insert(0, NoCliExtra())
sys.argv[0] = ARGV0
from ragbudget_server.cli import main
sys.exit(main())
"""


def _python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )


@pytest.mark.process
def test_console_script_without_the_cli_extra_prints_one_line() -> None:
    done = _python(BLOCK_CLI_EXTRA.replace("ARGV0", repr("/usr/local/bin/ragbudget")))
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr == (
        "error: the ragbudget command is missing a dependency (No module named 'typer'): "
        "pip install ragbudget-server\n"
    )


@pytest.mark.process
def test_importing_the_cli_without_the_extra_is_one_import_error() -> None:
    done = _python(BLOCK_CLI_EXTRA.replace("ARGV0", repr("-c")))
    assert done.returncode == 1
    assert done.stderr.count("Traceback") == 1, done.stderr
    assert done.stderr.rstrip().endswith(
        "ImportError: the ragbudget command is missing a dependency (No module named 'typer'): "
        "pip install ragbudget-server"
    )


@pytest.mark.process
@pytest.mark.parametrize(
    ("args", "message", "code"),
    [
        (["search"], "error: Missing argument 'query'. (see 'ragbudget search --help')", 2),
        (
            ["search", "x", "--limit", "abc"],
            "error: Invalid value for '--limit': Input should be a valid integer, unable to "
            "parse string as an integer (see 'ragbudget search --help')",
            2,
        ),
        (["nosuch"], "error: No such command 'nosuch'. (see 'ragbudget --help')", 2),
        (
            ["read", "x.py", "--db", "{missing}"],
            "error: no ragbudget store at {missing}: run 'ragbudget ingest PATH --db {missing}' "
            "first",
            1,
        ),
    ],
)
def test_errors_are_one_unwrapped_line_off_a_terminal(
    tmp_path: Path, args: list[str], message: str, code: int
) -> None:
    missing = str(tmp_path / "missing")
    env = {**os.environ, "COLUMNS": "30", "ANONYMIZED_TELEMETRY": "False"}
    done = subprocess.run(
        [str(RAGBUDGET), *(a.format(missing=missing) for a in args)],
        capture_output=True, text=True, env=env, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == code and done.stdout == ""
    assert done.stderr == message.format(missing=missing) + "\n"


def test_max_file_bytes_sets_the_size_cap(tmp_path: Path, corpus: Path) -> None:
    from ragbudget_server.cli import app
    from typer.testing import CliRunner

    db = str(tmp_path / "db")
    runner = CliRunner()
    capped = runner.invoke(app, ["ingest", str(corpus), "--db", db, "--max-file-bytes", "3000"])
    assert capped.exit_code == 0, capped.output
    sizes = {p.name: p.stat().st_size for p in corpus.glob("*.py")}
    over = sorted(name for name, size in sizes.items() if size > 3000)
    assert over and len(over) < len(sizes)
    for name in over:
        assert f"over the size cap ({sizes[name]:,} > 3,000 bytes)" in capped.stderr
    bad = runner.invoke(app, ["ingest", str(corpus), "--db", db, "--max-file-bytes", "0"])
    assert bad.exit_code == 1
    assert "max_file_bytes must be between 1 and 2,147,483,648, got 0" in bad.stderr


NO_STORE_BEFORE_CHROMA = """
import atexit, sys
atexit.register(lambda: print("chromadb" in sys.modules, file=sys.stderr))
sys.argv = ["ragbudget", *ARGS]
from ragbudget_server.cli import main
main()
"""


@pytest.mark.process
@pytest.mark.parametrize("args", [["search", "query"], ["read", "a.py"], ["stats"]])
def test_a_folder_without_a_store_is_an_error_before_chroma_loads(
    tmp_path: Path, args: list[str]
) -> None:
    """A read of a folder without a store fails with the store's own one-line error, before
    Chroma is imported (it takes two seconds of the three such a mistake cost), and the
    folder stays as it was."""
    missing = tmp_path / "nothing-here"
    code = NO_STORE_BEFORE_CHROMA.replace("ARGS", repr([*args, "--db", str(missing)]))
    done = _python(code)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.splitlines() == [
        f"error: no ragbudget store at {missing}: run 'ragbudget ingest PATH --db {missing}' first",
        "False",
    ]
    assert not missing.exists()
