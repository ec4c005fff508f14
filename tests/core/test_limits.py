"""Walls: every surface that takes a counter stops at whichever wall comes first."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ragbudget import Chunk, cut_text, fit, get_counter, truncate_head
from ragbudget.limits import (
    DEFAULT_PROFILE,
    PROFILES,
    WalledCounter,
    Walls,
    profile_for,
    profile_names,
)

TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=400)
WALLS = st.builds(
    Walls,
    tokens=st.integers(0, 300),
    chars=st.none() | st.integers(1, 600),
    bytes=st.none() | st.integers(1, 900),
)


def within(walls: Walls, counter: WalledCounter, text: str) -> bool:
    return walls.crossed(counter.measure(text)) is None


@settings(max_examples=200, deadline=None)
@given(WALLS, TEXT)
def test_units_fit_exactly_when_every_wall_holds(walls: Walls, text: str) -> None:
    counter = WalledCounter(get_counter(), walls)
    assert (counter.count(text) <= walls.tokens) == within(walls, counter, text)
    assert counter.count(text) >= counter.inner.count(text)


@settings(max_examples=100, deadline=None)
@given(WALLS, TEXT)
def test_a_cut_stops_at_the_first_wall(walls: Walls, text: str) -> None:
    counter = WalledCounter(get_counter(), walls)
    cut = cut_text(text, walls.tokens, counter)
    if cut is None:
        assert not within(walls, counter, "")
        return
    assert within(walls, counter, cut.text)
    if cut.size < len(text):  # one character more would cross a wall (at a character cut)
        exact = cut_text(text, walls.tokens, counter, at_boundary=False)
        assert exact is not None
        assert not within(walls, counter, text[: exact.size + 1])


@settings(max_examples=100, deadline=None)
@given(WALLS, st.lists(TEXT, min_size=1, max_size=8), st.sampled_from(["\n\n", "", "\n---\n"]))
def test_fit_keeps_the_joined_text_within_every_wall(
    walls: Walls, texts: list[str], separator: str
) -> None:
    counter = WalledCounter(get_counter(), walls)
    chunks = [Chunk(id=str(i), text=t, score=1.0 - i / 10) for i, t in enumerate(texts)]
    result = fit(chunks, walls.tokens, counter=counter, separator=separator)
    joined = separator.join(c.text for c in result.chunks)
    assert within(walls, counter, joined)


@settings(max_examples=60, deadline=None)
@given(WALLS, TEXT)
def test_truncation_stops_at_the_first_wall(walls: Walls, text: str) -> None:
    counter = WalledCounter(get_counter(), walls)
    try:
        shown = truncate_head(text * 3, max_tokens=walls.tokens, counter=counter)
    except ValueError:
        return  # a budget too small for the notice is an error naming the smallest that works
    assert within(walls, counter, shown.text)


def test_bound_names_the_binding_wall() -> None:
    counter = WalledCounter(get_counter("chars:4"), Walls(tokens=100, chars=200, bytes=300))
    assert counter.bound("x" * 300) == "chars"  # 75% of the tokens, 150% of the characters
    assert counter.bound("é" * 140) == "bytes"  # 35%, 70% of the characters, 93% of the bytes
    assert counter.bound("x" * 190) == "chars"  # 47%, 95% of the characters, 63% of the bytes
    wide = WalledCounter(get_counter("chars:1"), Walls(tokens=100, chars=1000))
    assert wide.bound("x" * 90) == "tokens"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"tokens": -1}, "tokens must be >= 0"),
        ({"tokens": 10, "chars": 0}, "chars must be >= 1"),
        ({"tokens": 10, "bytes": "9"}, "bytes must be an int"),
        ({"tokens": True}, "tokens must be an int"),
    ],
)
def test_bad_walls_name_the_argument(options: dict[str, object], message: str) -> None:
    with pytest.raises((TypeError, ValueError), match=message):
        Walls(**options)  # type: ignore[arg-type]


def test_profiles_by_client_name() -> None:
    assert profile_for("claude-code").name == "claude-code"
    assert profile_for("Claude-Code").name == "claude-code"
    assert profile_for("some-new-agent") is DEFAULT_PROFILE
    assert profile_for(None) is DEFAULT_PROFILE
    assert profile_for("whatever", override="codex").name == "codex"
    with pytest.raises(ValueError, match="client profile must be one of"):
        profile_for("x", override="nope")
    claude = get_counter("claude")
    for profile in PROFILES:
        assert profile.source
        if profile.claude_tokens is not None:
            assert profile.walls(claude).tokens == profile.claude_tokens
        assert profile.walls(get_counter()).tokens == profile.tokens


@pytest.mark.parametrize(
    ("client_name", "profile"),
    [
        ("claude-code", "claude-code"),
        ("claude-ai", "claude-desktop"),
        ("codex-mcp-client", "codex"),
        ("gemini-cli-mcp-client", "gemini-cli"),
        ("cursor-vscode", "cursor"),
        ("Visual Studio Code", "vscode"),
        ("Visual Studio Code - Insiders", "vscode"),
        ("visual_studio_code", "vscode"),
        ("github-copilot-cli", "copilot-cli"),
        ("mcp", "default"),
        ("", "default"),
    ],
)
def test_the_names_clients_send(client_name: str, profile: str) -> None:
    """The `clientInfo.name` each client sends at initialize (docs/mcp.md: where each is read)."""
    assert profile_for(client_name).name == profile


def test_characters_are_counted_as_javascript_counts_them() -> None:
    walls = Walls(tokens=100, chars=10)
    counter = WalledCounter(get_counter("chars:100"), walls)
    assert counter.measure("😀" * 5).chars == 10  # UTF-16: two units each
    assert within(walls, counter, "😀" * 5)
    assert not within(walls, counter, "😀" * 6)
    assert counter.measure("é" * 10).chars == 10


def test_each_profile_is_picked_by_the_name_its_client_sends() -> None:
    for profile in PROFILES:
        assert profile.sends is not None and profile_for(profile.sends) is profile


def test_profile_names_and_the_default_stay_inside_the_strict_walls() -> None:
    assert profile_names()[-1] == "default"
    assert len(set(profile_names())) == len(PROFILES) + 1
    for profile in (*PROFILES, DEFAULT_PROFILE):
        if profile.chars is not None and profile.name.startswith("claude"):
            assert profile.chars < 50_000  # under the save-to-file wall
    assert DEFAULT_PROFILE.bytes is not None and DEFAULT_PROFILE.bytes < 40_000  # Codex: 4 B/token
