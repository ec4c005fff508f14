"""The guard's option errors: one line that says what to do, before anything starts, whether
it runs as `ragbudget-guard` or as the application's `ragbudget guard`."""

from __future__ import annotations

import pytest
from ragbudget_guard.command import app as guard_app
from ragbudget_server.cli import app as ragbudget_app
from typer.testing import CliRunner

COMMANDS = {"ragbudget-guard": (guard_app, []), "ragbudget guard": (ragbudget_app, ["guard"])}
"""Each name the guard runs under: its typer app and the arguments that pick the guard."""


@pytest.mark.parametrize("name", sorted(COMMANDS))
@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "say which server to guard: its command after '--'"),
        (["--url", "http://x/mcp", "--", "node", "s.js"], "not both"),
        (["--url", "ftp://x/mcp"], "--url must be an http:// or https:// URL"),
        (["--env", "NOVALUE", "--", "node"], "--env takes NAME=VALUE"),
        (["--tool-budget", "read=lots", "--", "node"], "takes a number of tokens"),
        (["--client", "nope", "--", "node"], "client must be one of"),
        (["--max-tokens", "5", "--", "node"], "max_tokens must be >= 128"),
    ],
)
def test_bad_options_are_one_line_that_says_what_to_do(
    name: str, args: list[str], message: str
) -> None:
    app, first = COMMANDS[name]
    result = CliRunner().invoke(app, [*first, *args], prog_name=name.split()[0])
    assert result.exit_code == 2
    assert message in result.output
    assert result.output.startswith(f"{name}: "), result.output  # the name it was run by
    assert args != [] or "not both" not in result.output  # neither was given


def test_both_commands_are_the_one_guard() -> None:
    """`ragbudget guard` is `ragbudget-guard`: the same function, with the same options."""
    (only,) = guard_app.registered_commands
    (registered,) = [c for c in ragbudget_app.registered_commands if c.name == "guard"]
    assert only.callback is registered.callback


def test_the_guard_help_shows_no_type_beside_flags() -> None:
    from ragbudget_guard.command import app as guard_app
    from typer.testing import CliRunner

    result = CliRunner().invoke(guard_app, ["--help"], env={"COLUMNS": "200", "NO_COLOR": "1"})
    assert result.exit_code == 0, result.output
    assert "<bool>" not in result.output and "--help" in result.output
