"""The same search gives the same answer through the server (issue 51).

Five stores built from the same files, served in-process: the same `search` (text and JSON,
the issue's 2,000-token JSON ask included), and the page its cursor continues to, answer the
same text block and the same `_meta` from each. The store-level grid is
`tests/server/store/test_same_answer.py`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client
from mcp_helpers import page_of, whole_answer
from ragbudget_server.mcp import ServerSettings, create_server
from ragbudget_server.store import DocumentStore

ASKS: list[dict[str, Any]] = [
    {"query": "how are floats and infinity encoded", "max_tokens": 2000, "limit": 50},
    {"query": "decode a JSON string with escapes", "max_tokens": 800, "limit": 10},
]


@pytest.fixture(scope="module")
def dbs(stdlib: Path, tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    root = tmp_path_factory.mktemp("same-answer-mcp")
    paths = []
    for i in range(5):
        store = DocumentStore(path=root / f"db{i}")
        store.ingest([stdlib / "json", stdlib / "email" / "headerregistry.py"])
        store.close()
        paths.append(root / f"db{i}")
    return paths


async def _answers(db: Path) -> list[tuple[str, str]]:
    """Each ask's answer and its cursor's page, as (text block, page fields as JSON)."""
    got = []
    async with Client(create_server(ServerSettings(db=db))) as client:
        for ask in ASKS:
            for format in ("text", "json"):
                args = {**ask, "format": format}
                result = await client.call_tool_mcp("search", args)
                assert not result.is_error, whole_answer(result)
                got.append((whole_answer(result), repr(page_of(result))))
                cursor = page_of(result).get("next_cursor")
                assert cursor is not None
                more = await client.call_tool_mcp("search", {**args, "cursor": cursor})
                got.append((whole_answer(more), repr(page_of(more))))
    return got


async def test_served_stores_built_alike_answer_alike(dbs: list[Path]) -> None:
    first, *others = [await _answers(db) for db in dbs]
    for other in others:
        assert other == first
