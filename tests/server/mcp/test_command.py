"""`ragbudget serve` refuses bad options before serving, on stderr, leaving stdout empty."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
import typer
from ragbudget_server.mcp.command import register
from ragbudget_server.mcp.http_security import check_auth_token
from typer.testing import CliRunner


@pytest.fixture
def app() -> typer.Typer:
    app = typer.Typer()
    register(app)

    @app.callback()
    def _root() -> None:
        """Root."""

    return app


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--max-tokens-ceiling", "10"], "max_tokens_ceiling must be between 256"),
        (["--allow-root", "/no/such/folder"], "not an existing directory"),
        (["--db", "x", "--server", "http://127.0.0.1:1"], "either db"),
        (["--server", "ftp://example.org"], "http"),
        (["--log-level", "LOUD"], "--log-level"),
        (["--counter", "nope"], "--counter 'nope': unknown counter spec"),
    ],
)
def test_bad_options_fail_fast_on_stderr(app: typer.Typer, args: list[str], expected: str) -> None:
    result = CliRunner().invoke(app, ["serve", *args])
    assert result.exit_code == 2, result.output
    assert expected in result.stderr
    assert result.stdout == "", "stdout is the protocol's"


def test_the_command_line_server_beats_the_environment_db(app: typer.Typer, tmp_path: Path) -> None:
    """The environment's --db gives way to --server on the command line; the server is down,
    which does not stop the server (its tools report it): stdin's EOF ends the session."""
    runner = CliRunner(env={"RAGBUDGET_DB": str(tmp_path)})
    result = runner.invoke(
        app, ["serve", "--server", "http://127.0.0.1:9", "--log-level", "INFO"], input=""
    )
    assert result.exit_code == 0, result.output
    assert "serving collection 'documents' of http://127.0.0.1:9" in result.stderr
    assert result.stdout == ""
    for thread in threading.enumerate():  # its store opener must not log into a later test
        if thread.name == "ragbudget-open-store":
            thread.join(timeout=60)


@pytest.mark.parametrize(
    ("args", "env", "expected"),
    [
        (["--auth-token", ""], {}, "is empty"),
        (["--auth-token", "   "], {}, "is empty"),
        ([], {"RAGBUDGET_AUTH_TOKEN": ""}, "is empty"),
        ([], {"RAGBUDGET_AUTH_TOKEN": " \t "}, "is empty"),
        (["--auth-token", " padded "], {}, "starts or ends with whitespace"),
        (["--allow-host", "http://evil.example"], {}, "--allow-host 'http://evil.example' is not"),
        (["--allow-host", " "], {}, "is not a host name"),
        (["--allow-origin", "app.example"], {}, "--allow-origin 'app.example' is not an origin"),
        (["--allow-origin", "https://app.example/path"], {}, "scheme and host, no path"),
    ],
)
def test_bad_http_options_are_one_line_startup_errors(
    app: typer.Typer, tmp_path: Path, args: list[str], env: dict[str, str], expected: str
) -> None:
    runner = CliRunner(env=env)
    result = runner.invoke(
        app, ["serve", "--db", str(tmp_path), "--transport", "http", "--port", "1", *args]
    )
    assert result.exit_code == 2, result.output
    assert expected in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert result.stdout == ""


def test_check_auth_token_keeps_a_real_token() -> None:
    assert check_auth_token(None) is None
    assert check_auth_token("a-real-token") == "a-real-token"
    with pytest.raises(ValueError, match="empty"):
        check_auth_token("")


def test_allowed_hosts_and_origins_come_from_options_or_the_environment(
    app: typer.Typer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[dict[str, Any]] = []
    monkeypatch.setattr(
        "ragbudget_server.mcp.command.run_http", lambda mcp, **kwargs: calls.append(kwargs)
    )
    env = {"RAGBUDGET_ALLOW_HOST": "a.example *.lan", "RAGBUDGET_ALLOW_ORIGIN": "https://x.example"}
    # --allow-root: a server that may ingest starts on a folder with no store yet
    args = ["serve", "--db", str(tmp_path), "--transport", "http", "--allow-root", str(tmp_path)]
    assert CliRunner(env=env).invoke(app, args).exit_code == 0
    assert CliRunner().invoke(app, [*args, "--allow-host", "b.example"]).exit_code == 0
    assert calls[0]["allow_hosts"] == ["a.example", "*.lan"]
    assert calls[0]["allow_origins"] == ["https://x.example"]
    assert calls[1]["allow_hosts"] == ["b.example"]
    assert calls[1]["allow_origins"] == ()
    assert calls[0]["host"] == "127.0.0.1"
