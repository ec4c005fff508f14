"""`ragbudget guard`'s option errors: one line that says what to do, before anything starts."""

from __future__ import annotations

import pytest
from ragbudget_server.cli import app
from typer.testing import CliRunner


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["guard"], "say which server to guard: its command after '--'"),
        (["guard", "--url", "http://x/mcp", "--", "node", "s.js"], "not both"),
        (["guard", "--url", "ftp://x/mcp"], "--url must be an http:// or https:// URL"),
        (["guard", "--env", "NOVALUE", "--", "node"], "--env takes NAME=VALUE"),
        (["guard", "--tool-budget", "read=lots", "--", "node"], "takes a number of tokens"),
        (["guard", "--client", "nope", "--", "node"], "client must be one of"),
        (["guard", "--max-tokens", "5", "--", "node"], "max_tokens must be >= 128"),
    ],
)
def test_bad_options_are_one_line_that_says_what_to_do(args: list[str], message: str) -> None:
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2
    assert message in result.output
    assert args != ["guard"] or "not both" not in result.output  # neither was given
