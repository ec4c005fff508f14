"""Fixtures for the LlamaIndex plugin tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from li_parts import DISPATCHER, BudgetEvents
from llama_index.core.instrumentation import get_dispatcher  # type: ignore[attr-defined]


@pytest.fixture
def budget_events() -> Iterator[BudgetEvents]:
    """A real event handler on the plugin's dispatcher, removed after the test."""
    dispatcher = get_dispatcher(DISPATCHER)
    handler = BudgetEvents()
    dispatcher.add_event_handler(handler)
    try:
        yield handler
    finally:
        dispatcher.event_handlers = [h for h in dispatcher.event_handlers if h is not handler]
