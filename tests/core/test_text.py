"""`ragbudget.text.counted`: a count and its unit as messages say them."""

from __future__ import annotations

from ragbudget.limits import Walls
from ragbudget.text import counted


def test_one_of_a_unit_is_singular_and_any_other_count_plural() -> None:
    assert counted(1, "token") == "1 token"
    assert [counted(n, "byte") for n in (0, 2)] == ["0 bytes", "2 bytes"]
    assert counted(40_001, "character") == "40,001 characters"


def test_walls_in_words_say_one_token_right() -> None:
    assert Walls(1).describe() == "1 token"
    assert Walls(2, chars=1, bytes=1).describe() == "2 tokens, 1 character, 1 byte"
