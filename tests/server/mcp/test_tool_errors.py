"""Tool errors: bounded like answers, naming the argument at fault and what to do.

A real MCP session (fastmcp's in-memory client) over the shared store.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp_helpers import COUNTER_SPEC, text_blocks, visible_tokens
from ragbudget import CallableCounter, TokenCounter
from ragbudget_server.mcp import ServerSettings, create_server
from ragbudget_server.mcp.errors import BUDGET_ADVICE, fit_message, refuse
from ragbudget_server.store import DocumentStore

LONG = "very/long/" * 400  # 4,000 characters: within the schema's bound, far over any echo


async def _error(server: Any, tool: str, arguments: dict[str, Any]) -> str:
    async with Client(server) as client:
        result = await client.call_tool_mcp(tool, arguments)
    assert result.is_error, result
    (message,) = text_blocks(result)
    return message


@pytest.mark.parametrize(
    ("tool", "arguments", "expected"),
    [
        ("read_document", {"source": "x" * 1_000_000}, "source"),
        ("search", {"query": "q" * 100_000}, "query"),
        ("search", {"query": "json", "directory": "d" * 10_000}, "directory"),
        ("search", {"query": "json", "file_type": "t" * 1_000}, "file_type"),
    ],
)
async def test_oversized_arguments_are_refused_by_the_schema(
    server: Any, exact_counter: TokenCounter, tool: str, arguments: dict[str, Any], expected: str
) -> None:
    message = await _error(server, tool, arguments)
    assert expected in message
    assert "at most" in message
    assert exact_counter.count(message) < 200, message


async def test_schemas_bound_every_string_argument(server: Any) -> None:
    async with Client(server) as client:
        tools = {tool.name: tool.input_schema for tool in await client.list_tools()}
    assert tools["read_document"]["properties"]["source"]["maxLength"] == 4096
    assert tools["search"]["properties"]["query"]["maxLength"] == 4000
    directory = tools["search"]["properties"]["directory"]["anyOf"][0]
    assert directory["maxLength"] == 4096


@pytest.mark.parametrize("budget", [40, 100, 1000])
async def test_an_error_echoes_only_the_start_of_its_argument(
    server: Any, exact_counter: TokenCounter, budget: int
) -> None:
    async with Client(server) as client:
        result = await client.call_tool_mcp("read_document", {"source": LONG, "max_tokens": budget})
    assert result.is_error
    assert visible_tokens(result, exact_counter) <= budget
    (message,) = text_blocks(result)
    assert LONG not in message
    if budget >= 100:
        assert message.startswith(f"unknown source {LONG[:80]!r}… (4,000 characters)"), message


@pytest.mark.parametrize(
    ("tool", "arguments", "expected"),
    [
        (
            "read_document",
            {"source": "~nosuchuser-xyz/notes.md"},
            "source '~nosuchuser-xyz/notes.md' starts with '~nosuchuser-xyz', which is no "
            "user's home folder; give an absolute path, or one without '~'",
        ),
        (
            "read_document",
            {"source": "src/a\x00b.py"},
            "source 'src/a\\x00b.py' contains a NUL byte; give a plain file or folder path",
        ),
        (
            "search",
            {"query": "json", "directory": "~nosuchuser-xyz"},
            "directory '~nosuchuser-xyz' starts with '~nosuchuser-xyz', which is no user's",
        ),
        (
            "search",
            {"query": "json", "directory": "lib\x00"},
            "directory 'lib\\x00' contains a NUL byte",
        ),
    ],
)
async def test_bad_paths_name_the_argument(
    server: Any, tool: str, arguments: dict[str, Any], expected: str
) -> None:
    message = await _error(server, tool, arguments)
    assert message.startswith(expected), message
    assert "Error calling tool" not in message


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("~nosuchuser-xyz/docs", "paths '~nosuchuser-xyz/docs' starts with '~nosuchuser-xyz'"),
        ("docs\x00", "paths 'docs\\x00' contains a NUL byte"),
        ("", "String should have at least 1 character"),
        ("p" * 5000, "String should have at most 4096 characters"),
    ],
)
async def test_bad_ingest_paths_name_the_argument(tmp_path: Path, path: str, expected: str) -> None:
    settings = ServerSettings(db=tmp_path / "db", counter=COUNTER_SPEC, allow_roots=(tmp_path,))
    message = await _error(create_server(settings), "ingest", {"paths": [path]})
    assert expected in message
    assert "Error calling tool" not in message


def test_fit_message_cuts_to_the_budget(exact_counter: TokenCounter) -> None:
    message = "unknown source 'abc': no such document in collection 'documents'"
    assert fit_message(message, 1000, exact_counter) == message
    for budget in range(1, 12):
        cut = fit_message(message, budget, exact_counter)
        assert exact_counter.count(cut) <= budget
        assert not cut or cut.endswith("…")


async def test_a_budget_too_small_for_a_word_of_the_error_says_which_budget_shows_it(
    server: Any, small_source: str, exact_counter: TokenCounter
) -> None:
    past = {"source": small_source, "offset": 100_000}
    message = await _error(server, "read_document", {**past, "max_tokens": 1})
    # not an empty or `…` error: the budget that shows the message whole
    assert message.startswith("max_tokens=1 cannot hold this error's message"), message
    needed = int(message.rsplit(BUDGET_ADVICE, 1)[1])
    message = await _error(server, "read_document", {**past, "max_tokens": needed})
    assert message.startswith("offset 100000 is past the end"), message
    assert exact_counter.count(message) <= needed


def test_an_error_counting_one_token_says_token() -> None:
    """The count reads right when it is 1: `(1 token)`, not `(1 tokens)`."""
    one_each = CallableCounter(lambda text: 1 if text else 0)  # any text: one token
    message = str(refuse(ValueError("abc"), 0, one_each))
    assert "(1 token);" in message, message
    assert message.endswith(f"{BUDGET_ADVICE} 1")


sources = st.one_of(
    st.text(min_size=1, max_size=300),
    st.text(alphabet="~/.\x00ab", min_size=1, max_size=30),
    st.builds(lambda n, s: s * n, st.integers(1, 4000), st.sampled_from(["a", "é/", "~"])),
).filter(lambda s: 0 < len(s) <= 4096)


@pytest.fixture(scope="module")
def module_server(shared_store: DocumentStore, store_dir: Path) -> Any:
    return create_server(ServerSettings(db=store_dir, counter=COUNTER_SPEC), store=shared_store)


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(source=sources, budget=st.integers(min_value=1, max_value=400))
async def test_read_document_errors_fit_the_budget(
    module_server: Any, exact_counter: TokenCounter, source: str, budget: int
) -> None:
    async with Client(module_server) as client:
        result = await client.call_tool_mcp(
            "read_document", {"source": source, "max_tokens": budget}
        )
    (message,) = text_blocks(result)
    assert "Error calling tool" not in message
    if result.is_error and BUDGET_ADVICE in message:
        return  # the budget is below the smallest page: the error says which budget to use
    assert visible_tokens(result, exact_counter) <= budget, message


async def test_the_session_keeps_serving_after_every_kind_of_error(
    server: Any, exact_counter: TokenCounter
) -> None:
    bad_calls: list[tuple[str, dict[str, Any]]] = [
        ("read_document", {"source": "x" * 1_000_000}),
        ("read_document", {"source": LONG, "max_tokens": 30}),
        ("read_document", {"source": "~nosuchuser-xyz/a"}),
        ("read_document", {"source": "a\x00b"}),
        ("search", {"query": "json", "directory": "\x00"}),
        ("search", {"query": "json", "max_tokens": 1}),
        ("search", {"query": "json", "offset": 10_001}),
    ]
    async with Client(server) as client:
        for tool, arguments in bad_calls:
            result = await client.call_tool_mcp(tool, arguments)
            assert result.is_error, (tool, arguments)
            assert "Error calling tool" not in text_blocks(result)[0]
        result = await client.call_tool_mcp("search", {"query": "json decoder", "max_tokens": 800})
    assert not result.is_error
    assert visible_tokens(result, exact_counter) <= 800
