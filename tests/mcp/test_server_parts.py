"""The server's own parts without a store: budget check, ceiling, roots, settings, token."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from pydantic import ValidationError
from ragbudget import TokenCounter, get_counter
from ragbudget.mcp import BearerTokenVerifier, ServerSettings, clamp_budget
from ragbudget.mcp.budgeting import BudgetExceededError, fit_text
from ragbudget.mcp.roots import OutsideRootsError, check_ingest_paths
from ragbudget.store import StoreError


@dataclass
class Page:
    text: str

    def to_text(self) -> str:
        return self.text


class OvershootingStore:
    """Renders `extra` tokens more than it is asked for, `times` times, then behaves."""

    def __init__(self, extra: int, times: int, minimum: int = 1) -> None:
        self.extra, self.times, self.minimum = extra, times, minimum
        self.asked: list[int] = []

    def fetch(self, budget: int) -> Page:
        self.asked.append(budget)
        if budget < self.minimum:
            msg = f"max_tokens={budget} cannot hold even an empty response; use max_tokens >= 9"
            raise StoreError(msg)
        size = budget + self.extra if len(self.asked) <= self.times else budget
        return Page("x " * size)


@pytest.fixture
def chars() -> TokenCounter:
    return get_counter("chars:2")  # "x " is exactly one token


def test_fit_text_passes_a_fitting_response_through(chars: TokenCounter) -> None:
    store = OvershootingStore(extra=0, times=0)
    page, text, used = fit_text(store.fetch, 50, chars)
    assert (text, used, store.asked) == (page.text, 50, [50])


def test_fit_text_asks_again_lower_when_the_store_overshoots(chars: TokenCounter) -> None:
    store = OvershootingStore(extra=7, times=1)
    _, _, used = fit_text(store.fetch, 50, chars)
    assert store.asked == [50, 43]
    assert used == 43


def test_fit_text_refuses_rather_than_overflow(chars: TokenCounter) -> None:
    def stubborn(budget: int) -> Page:  # renders 57 tokens whatever it is asked
        del budget
        return Page("x " * 57)

    with pytest.raises(BudgetExceededError, match=r"max_tokens=50 .* use max_tokens >= 57"):
        fit_text(stubborn, 50, chars)
    lowered = OvershootingStore(extra=7, times=99, minimum=45)
    with pytest.raises(BudgetExceededError, match="max_tokens=50 "):
        fit_text(lowered.fetch, 50, chars)  # the retry's own error names the caller's budget


def test_fit_text_lets_the_stores_first_error_through(chars: TokenCounter) -> None:
    store = OvershootingStore(extra=0, times=0, minimum=100)
    with pytest.raises(StoreError, match="empty response"):
        fit_text(store.fetch, 50, chars)


def test_clamp_budget() -> None:
    assert clamp_budget(8192, 25_000) == (8192, None)
    assert clamp_budget(25_000, 25_000) == (25_000, None)
    budget, notice = clamp_budget(100_000, 25_000)
    assert budget == 25_000
    assert notice == "[max_tokens=100,000 is above this server's ceiling; clamped to 25,000 tokens]"


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
    import ragbudget.mcp

    for name in ragbudget.mcp.__all__:
        assert getattr(ragbudget.mcp, name) is not None, name
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        _ = ragbudget.mcp.nope
