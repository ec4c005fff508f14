"""The `ragbudget` command: ingest, search, read, stats; environment defaults; clean errors."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from ragbudget import get_counter
from ragbudget_server.cli import app
from typer.testing import CliRunner


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


@pytest.fixture
def db(tmp_path: Path, corpus: Path, runner: CliRunner) -> Path:
    path = tmp_path / "db"
    result = runner.invoke(app, ["ingest", str(corpus), "--db", str(path)])
    assert result.exit_code == 0, result.output
    return path


def test_ingest_prints_a_summary_and_is_idempotent(
    runner: CliRunner, corpus: Path, tmp_path: Path
) -> None:
    path = str(tmp_path / "db")
    first = runner.invoke(app, ["ingest", str(corpus), "--db", path, "--chunk-tokens", "256"])
    assert first.exit_code == 0, first.output
    assert "ingested" in first.stdout and "chunks added" in first.stdout
    again = runner.invoke(app, ["ingest", str(corpus), "--db", path, "--chunk-tokens", "256"])
    assert again.exit_code == 0
    assert re.search(r"unchanged\W+5\b", again.stdout), again.stdout
    assert re.search(r"chunks added\W+0\b", again.stdout), again.stdout


def test_search_json_is_the_budgeted_response(runner: CliRunner, db: Path) -> None:
    result = runner.invoke(
        app, ["search", "decode JSON", "--db", str(db), "--max-tokens", "900", "--json",
              "--counter", "tiktoken:cl100k_base"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    text = result.stdout.rstrip("\n")
    assert get_counter("tiktoken:cl100k_base").count(text) <= 900
    response = json.loads(text)
    assert response["results"] and response["max_tokens"] == 900
    nxt = response["next_cursor"]  # the one way a search continues
    more = runner.invoke(app, ["search", "decode JSON", "--db", str(db), "--json",
                               "--cursor", nxt, "--max-tokens", "900"])  # fmt: skip
    assert more.exit_code == 0
    assert json.loads(more.stdout)["results"][0]["id"] not in {r["id"] for r in response["results"]}


def test_search_readable_view_shows_sources_and_the_notice(runner: CliRunner, db: Path) -> None:
    result = runner.invoke(app, ["search", "scanstring", "--db", str(db), "--max-tokens", "800"])
    assert result.exit_code == 0, result.output
    assert "decoder.py:" in result.stdout
    assert "Use --cursor " in result.stdout  # a shell user is told the flag


def test_read_pages_and_stats(runner: CliRunner, db: Path, corpus: Path) -> None:
    result = runner.invoke(app, ["read", "json/tool.py", "--db", str(db), "--limit", "5"])
    assert result.exit_code == 0, result.output
    lines = (corpus / "tool.py").read_text().splitlines()
    assert result.stdout.splitlines() == lines[:5]
    assert "Use --offset 6 to continue" in result.stderr
    stats = runner.invoke(app, ["stats", "--db", str(db), "--json"])
    assert stats.exit_code == 0
    assert json.loads(stats.stdout)["documents"] == 5


def test_environment_defaults(runner: CliRunner, db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGBUDGET_DB", str(db))
    monkeypatch.setenv("RAGBUDGET_COUNTER", "chars:4")
    result = runner.invoke(app, ["search", "encoder", "--json", "--max-tokens", "700"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["counter"] == "chars:4"
    monkeypatch.setenv("RAGBUDGET_COLLECTION", "other")
    missing = runner.invoke(app, ["stats"])
    assert missing.exit_code == 1 and "unknown collection 'other'" in missing.stderr
    # A server from the environment gives way to a --db on the command line.
    monkeypatch.setenv("RAGBUDGET_SERVER", "http://127.0.0.1:9")
    local = runner.invoke(app, ["stats", "--db", str(db), "--collection", "documents"])
    assert local.exit_code == 0, local.output


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["search", "", "--db", "{db}"], "query must be a non-empty string"),
        (["search", "x", "--db", "{db}", "--max-tokens", "-5"], "max_tokens must be between 1"),
        (["search", "x", "--db", "{db}", "--limit", "0"], "limit must be between 1"),
        (["search", "x", "--db", "{db}", "--counter", "bogus"], "unknown counter spec 'bogus'"),
        (["read", "missing.py", "--db", "{db}"], "unknown source 'missing.py'"),
        (["ingest", "/no/such/dir", "--db", "{db}"], "path does not exist: '/no/such/dir'"),
        (["ingest", "x", "--db", "{db}", "--server", "http://h:1"], "either path or server"),
        (["search", "x", "--db", "{db}", "--collection", "nope"], "unknown collection 'nope'"),
        (
            ["ingest", "{db}", "--db", "{db}", "--embedding", "minilm"],
            "built with embedding 'hashing'",
        ),
    ],
)
def test_errors_are_one_line_on_stderr(
    runner: CliRunner, db: Path, args: list[str], needle: str
) -> None:
    result = runner.invoke(app, [a.replace("{db}", str(db)) for a in args])
    assert result.exit_code == 1
    assert needle in result.stderr
    assert result.stderr.startswith("error: "), repr(result.stderr)  # no empty line first
    assert "Traceback" not in result.output and result.stdout == ""


def test_ctrl_c_during_ingest_says_nothing_is_lost_and_how_to_finish(
    runner: CliRunner, db: Path, corpus: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ragbudget_server.store import DocumentStore

    def interrupted(*_args: object, **_kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(DocumentStore, "ingest", interrupted)
    result = runner.invoke(app, ["ingest", str(corpus), "--db", str(db)])
    assert result.exit_code == 130
    assert result.stderr.count("\n") == 1, result.stderr  # one line
    assert "nothing is lost" in result.stderr and "ingest again" in result.stderr


@pytest.mark.process
def test_console_script_runs(db: Path, tmp_path: Path) -> None:
    exe = Path(sys.executable).with_name("ragbudget")
    env = {**os.environ, "RAGBUDGET_DB": str(db)}
    done = subprocess.run(
        [str(exe), "search", "JSONDecodeError", "--json", "--max-tokens", "600"],
        capture_output=True, text=True, env=env, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert len(json.loads(done.stdout)["results"]) >= 1


def test_search_explain_pictures_the_budget(runner: CliRunner, db: Path) -> None:
    result = runner.invoke(
        app, ["search", "decode JSON", "--db", str(db), "--max-tokens", "700", "--limit", "8",
              "--explain"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "8 candidates, 700-token budget" in out
    assert ("kept" in out or "cut" in out) and "dropped" in out  # the first misfit
    assert re.search(r"[\d,]+ of 700 tokens \(\d+%\)", out), out


def test_search_takes_plain_and_a_cap_per_file(runner: CliRunner, db: Path) -> None:
    def search(*extra: str) -> dict[str, object]:
        args = ["search", "decode JSON", "--db", str(db), "--max-tokens", "1500", "--limit",
                "20", "--json", *extra]  # fmt: skip
        result = runner.invoke(app, args)
        assert result.exit_code == 0, result.output
        answer: dict[str, object] = json.loads(result.stdout)
        return answer

    plain, capped = search("--plain"), search("--max-per-source", "1")
    assert all("merged_ids" not in r for r in plain["results"])  # type: ignore[attr-defined]
    sources = [r["source"] for r in capped["results"]]  # type: ignore[attr-defined]
    assert len(sources) == len(set(sources))
    bad = runner.invoke(app, ["search", "x", "--db", str(db), "--max-per-source", "0"])
    assert bad.exit_code != 0 and "max-per-source" in bad.output


def test_store_options_are_one_definition_on_every_command() -> None:
    """--db/--server/--collection/--embedding/--counter and the timeouts: the same option, the
    same environment variable, the same help, wherever a command takes them (serve included)."""
    import typer.main

    group = typer.main.get_command(app)
    seen: dict[str, tuple[object, ...]] = {}
    names = {"db", "server", "collection", "embedding", "counter", "connect_timeout",
             "read_timeout"}  # fmt: skip
    for name in ("ingest", "search", "read", "stats", "serve"):
        command = group.commands[name]  # type: ignore[attr-defined]
        for param in command.params:
            if param.name in names:
                key = (param.opts, param.envvar, param.help, param.default)
                assert seen.setdefault(param.name, key) == key, (name, param.name)
    assert seen["embedding"][1] == "RAGBUDGET_EMBEDDING"
    assert set(seen) == names
