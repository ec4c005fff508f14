"""PartsCounter: a rendering joined by a sentinel counts as the sum of its parts."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from ragbudget import PartsCounter, get_counter

COUNTER = get_counter("chars:1")


@given(st.lists(st.text(max_size=30), max_size=6))
def test_count_is_the_sum_of_the_parts(parts: list[str]) -> None:
    counter = PartsCounter(COUNTER, parts)
    assert all(counter.sentinel not in p for p in parts)
    joined = counter.join(parts)
    assert counter.count(joined) == sum(COUNTER.count(p) for p in parts)
    assert counter.name == COUNTER.name and counter.exact == COUNTER.exact


def test_the_sentinel_is_a_character_no_text_holds() -> None:
    assert PartsCounter(COUNTER, ["a\x1eb"]).sentinel != "\x1e"
    every = "".join(["\x1e", "\x1f", "\ue000", "\ue001", "\ufdd0", "\ufdd1"])
    with pytest.raises(ValueError, match="separator"):
        PartsCounter(COUNTER, [every])
