"""The client table: one data file (`ragbudget/clients.json`) the code reads, each row with its
sources and the date they were checked, and docs/mcp.md's table written from it."""

from __future__ import annotations

import importlib.util
import json
from datetime import date
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
from ragbudget.limits import (
    CLAUDE_CODE_CHARS,
    CLAUDE_MAX_TOKENS_CEILING,
    CUTS,
    DEFAULT_MAX_TOKENS_CEILING,
    DEFAULT_PROFILE,
    FORWARDS,
    PROFILES,
    profile_for,
    profile_from,
)

ROOT = Path(__file__).resolve().parents[2]


def rows() -> list[dict[str, Any]]:
    data = json.loads(resources.files("ragbudget").joinpath("clients.json").read_text("utf-8"))
    return [*data["profiles"], data["default"]]


def test_every_profile_is_read_from_the_data_file() -> None:
    assert [row["name"] for row in rows()] == [p.name for p in (*PROFILES, DEFAULT_PROFILE)]
    for profile in (*PROFILES, DEFAULT_PROFILE):
        assert profile.source.strip() and profile.cut.strip(), profile.name
        assert date.fromisoformat(profile.checked) <= date.today(), profile.name
        assert profile.forwards in FORWARDS and profile.cuts in CUTS, profile.name
        assert all(link.startswith("https://") for link in profile.links), profile.name
        if profile.sends is not None:
            assert profile_for(profile.sends) is profile, profile.name


def test_the_walls_users_rely_on() -> None:
    claude = profile_for("claude-code")
    assert (claude.tokens, claude.claude_tokens, claude.chars) == (
        DEFAULT_MAX_TOKENS_CEILING,
        CLAUDE_MAX_TOKENS_CEILING,
        CLAUDE_CODE_CHARS,
    )
    assert claude.forwards == "structured" and profile_for("codex-mcp-client").forwards == (
        "structured"
    )
    gemini = profile_for("gemini-cli-mcp-client")
    assert gemini.chars is not None and gemini.chars < 40_000 and gemini.cuts == "head-tail"
    assert gemini.forwards == "text"
    # The default sits inside every known client's walls but Copilot CLI's.
    # (a default answer's characters are at most its bytes, under the byte wall).
    default = DEFAULT_PROFILE
    assert default.chars is not None and default.bytes is not None
    for profile in PROFILES:
        if profile.name == "copilot-cli":
            continue
        assert default.tokens <= profile.tokens, profile.name
        assert profile.chars is None or min(default.chars, default.bytes) <= profile.chars
        assert profile.bytes is None or default.bytes <= profile.bytes, profile.name


@pytest.mark.parametrize("field", ["source", "checked", "links", "forwards", "cut"])
def test_a_profile_without_its_source_or_date_is_refused(field: str) -> None:
    row = dict(rows()[0])
    del row[field]
    with pytest.raises(ValueError, match=rf"'claude-code'.*{field}"):
        profile_from(row)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("source", "  "),
        ("checked", "last week"),
        ("forwards", "model"),
        ("cuts", "tail"),
        ("tokens", 0),
        ("chars", True),
        ("clients", "claude"),
    ],
)
def test_a_wrong_value_names_the_profile_and_field(field: str, value: Any) -> None:
    row = dict(rows()[0]) | {field: value}
    with pytest.raises(ValueError, match=rf"'claude-code'.*{field}"):
        profile_from(row)


def test_docs_table_is_written_from_the_data_file() -> None:
    spec = importlib.util.spec_from_file_location(
        "client_table", ROOT / "tools" / "client_table.py"
    )
    assert spec is not None and spec.loader is not None
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    doc = (ROOT / "docs" / "mcp.md").read_text(encoding="utf-8")
    assert tool.rewritten(doc) == doc, "run: uv run --all-packages python tools/client_table.py"
    for profile in (*PROFILES, DEFAULT_PROFILE):
        assert f"| `{profile.name}` | {profile.title} |" in doc
