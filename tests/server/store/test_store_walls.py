"""The store's search and read stop at whichever wall comes first (hypothesis properties).

With a `WalledCounter`, the store's budget (`max_tokens` = the walls' tokens) holds tokens,
characters (UTF-16 units) and UTF-8 bytes at once, on exactly the text it returns: the store
fits its rendering by the counter's units, so no other argument is needed.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ragbudget import get_counter
from ragbudget.limits import WalledCounter, Walls
from ragbudget_server.store import DocumentStore, StoreError

WALLS = st.builds(
    Walls,
    tokens=st.integers(1, 6000),
    chars=st.none() | st.integers(1, 30_000),
    bytes=st.none() | st.integers(1, 30_000),
)
QUERIES = ["decode JSON", "email header parsing", "event loop tasks", "quoted printable"]
SLOW = settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def _within(walls: Walls, counter: WalledCounter, text: str) -> bool:
    return walls.crossed(counter.measure(text)) is None


@SLOW
@given(
    walls=WALLS,
    query=st.sampled_from(QUERIES),
    limit=st.integers(1, 40),
    format=st.sampled_from(["text", "json"]),
    evidence=st.booleans(),
)
def test_search_stops_at_the_first_wall(
    stdlib_store_embedded: DocumentStore,
    walls: Walls,
    query: str,
    limit: int,
    format: str,
    evidence: bool,
) -> None:
    counter = WalledCounter(get_counter(), walls)
    try:
        page = stdlib_store_embedded.search(
            query, limit=limit, max_tokens=walls.tokens, counter=counter, format=format,
            evidence=evidence,
        )  # fmt: skip
    except StoreError as exc:
        message = str(exc)
        assert "use max_tokens >=" in message  # too small a wall says what it needs
        return
    text = page.to_text()
    assert _within(walls, counter, text), (counter.measure(text), walls)
    assert page.used_tokens == counter.count(text) <= walls.tokens


@pytest.mark.slow  # ~2.6 s of CPU
@SLOW
@given(walls=WALLS, offset=st.integers(1, 400), format=st.sampled_from(["text", "json"]))
def test_read_stops_at_the_first_wall(
    stdlib_store_embedded: DocumentStore, walls: Walls, offset: int, format: str
) -> None:
    source = next(s for s in stdlib_store_embedded.sources() if s.endswith("json/decoder.py"))
    counter = WalledCounter(get_counter(), walls)
    try:
        page = stdlib_store_embedded.read(
            source, offset=offset, max_tokens=walls.tokens, counter=counter, format=format
        )
    except StoreError as exc:
        message = str(exc)
        assert "max_tokens" in message or "past the end" in message
        return
    text = page.to_text()
    assert _within(walls, counter, text), (counter.measure(text), walls)
    if page.next_offset is not None:
        assert f"offset={page.next_offset}" in text


@pytest.mark.parametrize("wall", ["chars", "bytes"])
def test_a_character_or_byte_wall_binds_before_a_generous_token_budget(
    stdlib_store_embedded: DocumentStore, wall: str
) -> None:
    walls = Walls(tokens=20_000, **{wall: 3000})  # type: ignore[arg-type]
    counter = WalledCounter(get_counter(), walls)
    page = stdlib_store_embedded.search("decode JSON", limit=40, max_tokens=20_000, counter=counter)
    text = page.to_text()
    assert page.truncated and _within(walls, counter, text)
    assert counter.bound(text) == wall
