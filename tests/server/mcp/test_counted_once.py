"""The server counts each answer once: the store's measure travels with it to the guard.

Measured with a counting wrapper on the exact counter's class (`count` and `count_up_to`, on
whichever backend `tiktoken:cl100k_base` resolves to: tiktoken, or bpe-openai): before the
store's count was handed to the server's `TokenBudgetMiddleware`, every text block of a
`search` or `read_document` answer was counted twice (the store's answer by the store, the
clamp notice by the tool, then each block again by the middleware); now once.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from fastmcp import Client
from mcp_helpers import COUNTER_SPEC, text_blocks
from ragbudget import get_counter
from ragbudget.middleware import TokenBudgetMiddleware
from ragbudget_server.store import DocumentStore


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every text the exact counter counts, in order (store, tools and middleware alike)."""
    texts: list[str] = []
    backend = type(get_counter(COUNTER_SPEC))
    count = backend.count

    def counting(self: Any, text: str) -> int:
        texts.append(text)
        return count(self, text)

    monkeypatch.setattr(backend, "count", counting)
    up_to = getattr(backend, "count_up_to", None)
    if up_to is not None:

        def counting_up_to(self: Any, text: str, limit: int) -> int:
            texts.append(text)
            return up_to(self, text, limit)  # type: ignore[no-any-return]

        monkeypatch.setattr(backend, "count_up_to", counting_up_to)
    return texts


CALLS = [
    ("search", {"query": "wrap text to a width", "max_tokens": 2000}),
    ("search", {"query": "wrap text to a width", "max_tokens": 2000, "format": "json"}),
    ("search", {"query": "wrap text to a width", "max_tokens": 2000, "evidence": False}),
    ("search", {"query": "wrap text to a width", "max_tokens": 10**6}),  # clamped: two blocks
    ("read_document", {"max_tokens": 2000}),
    ("read_document", {"max_tokens": 2000, "format": "json"}),
]


@pytest.mark.parametrize(("tool", "args"), CALLS)
async def test_each_block_of_an_answer_is_counted_once(
    tool: str, args: dict[str, Any], server: Any, small_source: str, counted: list[str]
) -> None:
    if tool == "read_document":
        args = {**args, "source": small_source}
    async with Client(server) as client:
        counted.clear()
        result = await client.call_tool(tool, args)
    blocks = text_blocks(result)
    times = Counter(counted)
    assert [times[block] for block in blocks] == [1] * len(blocks)
    (guard,) = [m for m in server.middleware if isinstance(m, TokenBudgetMiddleware)]
    assert len(guard.receipts) == 0


async def test_other_tools_are_still_measured_by_the_guard(
    server: Any, shared_store: DocumentStore, counted: list[str]
) -> None:
    async with Client(server) as client:
        counted.clear()
        result = await client.call_tool("stats")
    assert text_blocks(result)[0] in counted  # `stats` does not vouch: the guard counts it
