"""`ragbudget <command> --help` shows every option's default and environment variable.

Typer renders help with rich, and rich reads `[default: ...]` written into a help text as
markup and drops it: defaults that are not plain values go in `show_default` instead. These
tests read the rendered help of every command, as a user sees it on a wide terminal.
"""

from __future__ import annotations

import enum
import re
from typing import Any

import pytest
import typer.main
from ragbudget_server._defaults import DEFAULT_MAX_FILE_BYTES
from ragbudget_server.cli import app
from typer.testing import CliRunner

WIDE = {"COLUMNS": "400", "TERMINAL_WIDTH": "400", "NO_COLOR": "1"}
GROUP: Any = typer.main.get_command(app)  # typer's (vendored) click Group
COMMANDS = sorted(GROUP.commands)
ACTIONS = {"--help", "--version"}
"""Eager options that do something and exit: they have no setting to default."""


def _option_blocks(text: str) -> dict[str, str]:
    """Each option's row of the rendered help, its wrapped lines joined, keyed by its name."""
    blocks: dict[str, list[str]] = {}
    current: list[str] | None = None
    for raw in text.splitlines():
        line = raw.strip().strip("│").strip()
        if line.startswith(("╭", "╰")):
            current = None
        elif line.startswith("-"):
            current = blocks.setdefault(line.split()[0], [])
            current.append(line)
        elif current is not None and line:
            current.append(line)
    return {name: " ".join(" ".join(lines).split()) for name, lines in blocks.items()}


def _expected_default(option: Any) -> str | None:
    """The `[default: ...]` a user should see for `option`, or None for an eager action."""
    if option.opts[0] in ACTIONS:
        return None
    if isinstance(option.show_default, str):
        return f"[default: ({option.show_default})]"
    default = option.default
    if option.is_flag and option.secondary_opts:
        name = option.opts[0] if default else option.secondary_opts[0]
        return f"[default: {name.lstrip('-')}]"
    if isinstance(default, enum.Enum):
        default = default.value
    assert default is not None, f"{option.opts[0]} has no default to show: give it show_default"
    return f"[default: {default}]"


def _help(args: list[str]) -> str:
    result = CliRunner().invoke(app, [*args, "--help"], env=WIDE)
    assert result.exit_code == 0, result.output
    return result.output


@pytest.mark.parametrize("command", [None, *COMMANDS])
def test_help_shows_every_default_and_environment_variable(command: str | None) -> None:
    cmd = GROUP if command is None else GROUP.commands[command]
    blocks = _option_blocks(_help([] if command is None else [command]))
    options = [p for p in cmd.params if p.param_type_name == "option"]
    assert options
    for option in options:
        name = option.opts[0]
        block = blocks.get(name)
        assert block is not None, f"{name} is missing from the help of {command}"
        help_text = " ".join((option.help or "").split())
        assert help_text in block, f"{name}: rich ate part of its help text: {block!r}"
        expected = _expected_default(option)
        if expected is not None:
            assert expected in block, f"{name} does not show {expected}: {block!r}"
        if option.envvar:
            assert f"[env var: {option.envvar}]" in block, f"{name} hides its variable"


def test_the_command_list_has_every_command() -> None:
    assert set(COMMANDS) == {"ingest", "search", "read", "stats", "serve", "guard"}


def test_shown_file_size_cap_is_the_stores() -> None:
    from ragbudget_server.store.store import MAX_FILE_BYTES

    assert DEFAULT_MAX_FILE_BYTES == MAX_FILE_BYTES
    block = _option_blocks(_help(["ingest"]))["--max-file-bytes"]
    assert re.search(rf"\[default: \({MAX_FILE_BYTES:,} bytes", block)


def test_ingest_help_names_the_documents_extra() -> None:
    # rich reads `[documents]` as markup and drops it: the help said "need ragbudget-server"
    # (issue 50). It must name the extra, for pip and for a checkout.
    result = CliRunner().invoke(app, ["ingest", "--help"], env=WIDE)
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "pip install 'ragbudget-server[documents]'" in text
    assert "uv run --package ragbudget-server --extra documents ragbudget ingest" in text


@pytest.mark.parametrize("command", [[], *([c] for c in COMMANDS)])
def test_flags_show_no_type(command: list[str]) -> None:
    # typer printed `<bool>` beside every flag (`--version <bool>`, as if it took a value):
    # issue 50's papercut. Options that take a value keep their type.
    result = CliRunner().invoke(app, [*command, "--help"], env=WIDE)
    assert result.exit_code == 0, result.output
    assert "<bool>" not in result.output
    if command == ["search"]:
        assert "<int>" in result.output  # --limit, --max-tokens
