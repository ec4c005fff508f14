"""The server's own parts without a store: budget check, ceiling, roots, settings, token."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from pydantic import ValidationError
from ragbudget import TokenCounter, get_counter
from ragbudget.errors import RagbudgetError
from ragbudget_server.mcp import BearerTokenVerifier, ServerSettings
from ragbudget_server.mcp.answers import BudgetExceededError, checked_text
from ragbudget_server.mcp.roots import OutsideRootsError, check_ingest_paths


@dataclass
class Page:
    text: str
    measure: tuple[str, int] | None = None

    def to_text(self) -> str:
        return self.text

    def measured(self) -> tuple[str, int] | None:
        return self.measure


@pytest.fixture
def chars() -> TokenCounter:
    return get_counter("chars:2")  # "x " is exactly one token


def test_checked_text_uses_the_stores_measure_without_counting_again() -> None:
    def refuse(text: str) -> int:
        raise AssertionError(f"counted {text!r} again")

    page = Page("x " * 50, measure=("x " * 50, 50))
    assert checked_text(page, 50, get_counter(refuse)) == ("x " * 50, 50)


def test_checked_text_counts_an_unmeasured_response(chars: TokenCounter) -> None:
    assert checked_text(Page("x " * 50), 50, chars) == ("x " * 50, 50)


def test_checked_text_refuses_rather_than_overflow(
    chars: TokenCounter, caplog: pytest.LogCaptureFixture
) -> None:
    with pytest.raises(BudgetExceededError, match=r"counts 57 tokens .* over its 50-token budget"):
        checked_text(Page("x " * 57), 50, chars)
    with pytest.raises(BudgetExceededError):
        checked_text(Page("", measure=("x " * 57, 57)), 50, chars)
    errors = [r for r in caplog.records if r.levelname == "ERROR"]
    assert len(errors) == 2 and errors[0].name == "ragbudget_server.mcp.answers"
    assert isinstance(BudgetExceededError("x"), RagbudgetError | ValueError)


def test_roots_resolve_relative_paths_and_refuse_escapes(tmp_path: Path) -> None:
    root, other = tmp_path / "root", tmp_path / "other"
    (root / "docs").mkdir(parents=True)
    other.mkdir()
    (other / "x.md").write_text("x")
    (root / "out").symlink_to(other / "x.md")
    roots = [root.resolve()]
    assert check_ingest_paths(["docs", str(root / "docs")], roots) == [(root / "docs").resolve()]
    for bad in ["out", str(other), "docs/../../other", "/"]:
        with pytest.raises(OutsideRootsError, match="outside the allowed roots"):
            check_ingest_paths([bad], roots)
    with pytest.raises(OutsideRootsError, match="does not exist"):
        check_ingest_paths(["missing"], roots)
    with pytest.raises(OutsideRootsError, match="disabled"):
        check_ingest_paths(["docs"], [])


def test_settings_validate_their_arguments(tmp_path: Path) -> None:
    assert ServerSettings(allow_roots=(tmp_path,)).allow_roots == (tmp_path.resolve(),)
    assert not ServerSettings().ingest_enabled
    with pytest.raises(
        ValidationError, match="max_tokens_ceiling must be between 256 and 1,000,000"
    ):
        ServerSettings(max_tokens_ceiling=10)
    with pytest.raises(ValidationError, match="max_tokens_ceiling"):
        ServerSettings(max_tokens_ceiling=2_000_000)
    with pytest.raises(ValidationError, match="not an existing directory"):
        ServerSettings(allow_roots=(tmp_path / "missing",))
    with pytest.raises(ValidationError, match="either db"):
        ServerSettings(db=tmp_path, server="http://localhost:8000")
    with pytest.raises(ValidationError, match="http"):
        ServerSettings(server="localhost:8000")
    with pytest.raises(ValidationError, match="extra"):
        ServerSettings(unknown=1)  # type: ignore[call-arg]


async def test_bearer_token_verifier() -> None:
    verifier = BearerTokenVerifier("s3cret-token")
    granted = await verifier.verify_token("s3cret-token")
    assert granted is not None
    assert granted.client_id == "ragbudget-client"
    assert await verifier.verify_token("s3cret-token ") is None
    assert await verifier.verify_token("") is None
    with pytest.raises(ValueError, match="auth token"):
        BearerTokenVerifier(" padded ")


def test_public_names_resolve_lazily() -> None:
    import ragbudget_server.mcp

    for name in ragbudget_server.mcp.__all__:
        assert getattr(ragbudget_server.mcp, name) is not None, name
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        _ = ragbudget_server.mcp.nope
