"""`CountMemo`: a text counted in one call is not read again, and its answers stay right."""

from __future__ import annotations

from ragbudget import get_counter
from ragbudget.middleware.counts import MEMO_MIN_CHARS, CountMemo


class _Recording:
    """The bpe-openai o200k counter, recording the length of every text it reads."""

    def __init__(self) -> None:
        self.inner = get_counter("bpe:o200k_base")
        self.name, self.exact, self.stops_early = "recording", True, True
        self.read: list[int] = []

    def count(self, text: str) -> int:
        self.read.append(len(text))
        return self.inner.count(text)

    def count_up_to(self, text: str, limit: int) -> int:
        self.read.append(len(text))
        return int(self.inner.count_up_to(text, limit))  # type: ignore[attr-defined]


def test_counts_are_reused_and_floors_answer_only_lower_limits() -> None:
    text = "def f(x):\n    return x + 1\n" * 400  # ~11,000 characters, ~3,600 tokens
    recording = _Recording()
    memo = CountMemo(recording)
    whole = recording.inner.count(text)
    assert memo.count_up_to(text, 100) > 100  # stops there: a floor
    assert memo.count_up_to(text, 50) > 50  # answered by the floor
    assert len(recording.read) == 1
    assert memo.count_up_to(text, whole) == whole  # a higher limit: read again, whole now
    assert memo.count(text) == whole and memo.count_up_to(text, 10) == whole
    assert len(recording.read) == 2
    short = "x = 1\n" * 10
    assert len(short) < MEMO_MIN_CHARS
    memo.count(short), memo.count(short)
    assert len(recording.read) == 4  # short texts are counted each time
    assert (memo.name, memo.exact, memo.stops_early) == ("recording", True, True)
