"""The `hybrid` setting reaches every search the server runs (`ragbudget serve --dense`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client
from mcp_helpers import COUNTER_SPEC
from ragbudget_server.mcp import ServerSettings, create_server
from ragbudget_server.store import DocumentStore


@pytest.mark.parametrize("hybrid", [True, False])
async def test_the_setting_picks_the_ranking(
    shared_store: DocumentStore, store_dir: Path, monkeypatch: pytest.MonkeyPatch, hybrid: bool
) -> None:
    asked: list[Any] = []
    search = DocumentStore.search

    def spy(self: DocumentStore, query: str, **kwargs: Any) -> Any:
        asked.append(kwargs.get("hybrid"))
        return search(self, query, **kwargs)

    monkeypatch.setattr(DocumentStore, "search", spy)
    settings = ServerSettings(db=store_dir, counter=COUNTER_SPEC, hybrid=hybrid)
    async with Client(create_server(settings, store=shared_store)) as client:
        await client.call_tool("search", {"query": "binary operators"})
    assert asked and set(asked) == {hybrid}
