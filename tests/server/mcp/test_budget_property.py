"""Property: whatever the query and budget, the model-visible text fits, and says what it left out.

Runs through fastmcp's in-memory client (a real MCP session) against the shared store that
holds the context bomb, counting with tiktoken cl100k_base, the server's own counter.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from fastmcp import Client
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp_helpers import COUNTER_SPEC, page_of, text_blocks, visible_tokens, whole_answer
from ragbudget import TokenCounter
from ragbudget_server.mcp import DEFAULT_MAX_TOKENS_CEILING, ServerSettings, create_server
from ragbudget_server.mcp.answers import ReadAnswer, SearchAnswer
from ragbudget_server.store import DocumentStore

WORDS = [
    "json", "decode", "string", "operator", "precedence", "lambda", "wrap", "shell", "quote",
    "class", "def", "import", "exception", "comparison", "unicode", "escape", "token", "the",
]  # fmt: skip

queries = st.one_of(
    st.lists(st.sampled_from(WORDS), min_size=1, max_size=6).map(" ".join),
    st.text(
        alphabet=st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=50
    ).filter(str.strip),
)
budgets = st.integers(min_value=1, max_value=30_000)

Session = tuple[BlockingPortal, Client[Any]]


@pytest.fixture(scope="module")
def session(shared_store: DocumentStore, store_dir: Path) -> Iterator[Session]:
    """One MCP session for every example (hypothesis calls the test many times)."""
    server = create_server(ServerSettings(db=store_dir, counter=COUNTER_SPEC), store=shared_store)
    with start_blocking_portal() as portal:
        client: Client[Any] = Client(server)
        with portal.wrap_async_context_manager(client):
            yield portal, client


def _call(session: Session, tool: str, arguments: dict[str, Any]) -> Any:
    portal, client = session
    return portal.call(partial(client.call_tool_mcp, tool, arguments))


def _check_error(
    session: Session, counter: TokenCounter, result: Any, arguments: dict[str, Any]
) -> None:
    """The only acceptable error: a budget below what an empty response needs, saying which
    budget to ask for. Asking again with it answers within it (or is again an error: the
    store's minimum is measured on the empty page, and a page whose notice is longer can
    need a few tokens more; never an over-budget answer either way)."""
    (message,) = text_blocks(result)
    needed = re.search(r"use max_tokens >= (\d+)", message)
    assert needed is not None, message
    minimum = int(needed.group(1))
    assert arguments["max_tokens"] < minimum, message
    retry = _call(session, "search", {**arguments, "max_tokens": minimum})
    if not retry.is_error:
        assert visible_tokens(retry, counter) <= minimum


@settings(
    max_examples=35,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    query=queries,
    budget=budgets,
    limit=st.integers(min_value=1, max_value=60),
    concise=st.booleans(),
    format=st.sampled_from(["text", "json"]),
)
def test_search_text_never_exceeds_the_budget(
    session: Session,
    exact_counter: TokenCounter,
    query: str,
    budget: int,
    limit: int,
    concise: bool,
    format: str,
) -> None:
    arguments = {
        "query": query,
        "max_tokens": budget,
        "limit": limit,
        "concise": concise,
        "format": format,
    }
    result = _call(session, "search", arguments)
    if result.is_error:
        _check_error(session, exact_counter, result, arguments)
        return
    allowed = min(budget, DEFAULT_MAX_TOKENS_CEILING)
    assert visible_tokens(result, exact_counter) <= allowed
    # One copy: the text and the structured content (no texts in it) fit together.
    assert exact_counter.count(whole_answer(result)) <= allowed
    response = SearchAnswer.model_validate(page_of(result))
    text = text_blocks(result)[-1]

    returned = [r.id for r in response.results]
    assert response.budget.text_tokens == visible_tokens(result, exact_counter)
    assert response.budget.counter == COUNTER_SPEC
    if any(r.cut for r in response.results):
        assert response.truncated
    if format == "text":  # each result's lines are named in its header
        assert all(f":{r.start_line}-{r.end_line}" in text for r in response.results)
    assert response.total_count >= len(returned) or not returned
    if response.next_offset is not None:  # the model is told how to see more
        assert response.next_offset >= len(returned)
        assert response.next_cursor, "a first page continues by cursor alone"
        assert response.next_cursor in text or "raise max_tokens" in text, text


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    budget=budgets,
    offset=st.integers(min_value=1, max_value=520),
    format=st.sampled_from(["text", "json"]),
)
def test_read_document_page_never_exceeds_the_budget(
    session: Session,
    exact_counter: TokenCounter,
    small_source: str,
    budget: int,
    offset: int,
    format: str,
) -> None:
    arguments = {"source": small_source, "offset": offset, "max_tokens": budget, "format": format}
    result = _call(session, "read_document", arguments)
    if result.is_error:
        (message,) = text_blocks(result)
        assert "max_tokens" in message or "offset" in message, message
        return
    assert visible_tokens(result, exact_counter) <= min(budget, DEFAULT_MAX_TOKENS_CEILING)
    assert exact_counter.count(whole_answer(result)) <= min(budget, DEFAULT_MAX_TOKENS_CEILING)
    page = ReadAnswer.model_validate(page_of(result))
    if page.next_offset is not None:
        assert page.truncated
        assert f"offset={page.next_offset}" in text_blocks(result)[-1]
