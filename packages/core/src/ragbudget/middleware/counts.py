"""Counting a result once: what one call already counted, and what the server counted itself.

**`CountMemo`: one tool call's counts, each text counted once.** Cutting one result counts
the same texts more than once: the page search counts candidate pages (with their structured
mirror), the final check counts the chosen page and its mirror again, and the notice's "which
wall bound" measures them a third time. A guard counts through a `CountMemo` made for its
call, so a text already counted is not read again: an exact count is reused, and a count that
stopped past a limit answers any fits-check at or below that limit.

**`Receipts`: the count a server measured of its own result, handed to its middleware.** A
server whose tools budget their own answers (as `ragbudget serve` does) has counted each
answer already; the middleware need not count it again. The count cannot travel in the result
itself: a `_meta` field or a JSON key is something any tool could write, so a tool that forgot
its budget (or a third party's) could claim any count. It travels in the middleware instead.
The server, which holds the middleware, files a receipt for the result object it is about to
return (`TokenBudgetMiddleware.vouch`); the middleware redeems it when that same object comes
back from the call. A receipt holds:

- for that object only (a copy, or any other result with the same text, has none);
- for the text it was measured on (a result whose blocks changed since is counted again);
- once (redeeming it removes it; a result that never comes back leaves nothing behind).
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from functools import partial

from fastmcp.tools import ToolResult

from ragbudget._checks import check_int
from ragbudget.counters import TokenCounter, count_up_to, stops_early
from ragbudget.middleware.clients import visible_text

__all__ = ["MEMO_MIN_CHARS", "CountMemo", "Receipt", "Receipts"]

MEMO_MIN_CHARS = 2_000
"""Shorter texts are counted again (cheaper than keeping them)."""

_MAX_ENTRIES = 32


class CountMemo:
    """`inner`'s counts of the longer texts seen, for the life of one tool call."""

    def __init__(self, inner: TokenCounter) -> None:
        self.inner = inner
        self.name = inner.name
        self.exact = inner.exact
        self._known: dict[str, tuple[int, bool]] = {}
        """Text -> (count, whole): whole False when counting stopped past a limit (a floor)."""

    @property
    def stops_early(self) -> bool:
        return stops_early(self.inner)

    def _keep(self, text: str, tokens: int, whole: bool) -> None:
        if len(self._known) >= _MAX_ENTRIES:
            del self._known[next(iter(self._known))]
        self._known[text] = (tokens, whole)

    def count(self, text: str) -> int:
        if len(text) < MEMO_MIN_CHARS:
            return self.inner.count(text)
        known = self._known.get(text)
        if known is not None and known[1]:
            return known[0]
        tokens = self.inner.count(text)
        self._keep(text, tokens, True)
        return tokens

    def count_up_to(self, text: str, limit: int) -> int:
        """`count(text)` when at most `limit`, else a number above `limit`."""
        if len(text) < MEMO_MIN_CHARS:
            return count_up_to(self.inner, text, limit)
        known = self._known.get(text)
        if known is not None and (known[1] or known[0] > limit):
            return known[0]
        tokens = count_up_to(self.inner, text, limit)
        self._keep(text, tokens, tokens <= limit or not stops_early(self.inner))
        return tokens

    def __repr__(self) -> str:
        return f"CountMemo({self.inner!r})"


@dataclass(frozen=True)
class Receipt:
    """What a server measured of one result: its blocks' texts and what they count in all."""

    texts: tuple[str, ...]
    """Each content block's visible text (`visible_text`) when it was measured."""
    tokens: int
    """The blocks counted one by one and added up, as the middleware measures a result."""
    counter: str
    """The name of the counter `tokens` is measured with."""


class Receipts:
    """The receipts a middleware holds, keyed by the identity of the result each was filed for."""

    def __init__(self) -> None:
        self._held: dict[int, tuple[weakref.ref[ToolResult], Receipt]] = {}

    def __len__(self) -> int:
        return len(self._held)

    def file(self, result: ToolResult, tokens: int, counter: str) -> None:
        """Keep `tokens` (by `counter`) as the measure of `result`, as its blocks are now."""
        check_int("tokens", tokens, minimum=0)
        if not isinstance(result, ToolResult):
            msg = f"result must be a fastmcp ToolResult, got {type(result).__name__}"
            raise TypeError(msg)
        key = id(result)
        ref = weakref.ref(result, partial(self._forget, key))
        texts = tuple(visible_text(block) for block in result.content)
        self._held[key] = (ref, Receipt(texts, tokens, str(counter)))

    def redeem(self, result: ToolResult) -> Receipt | None:
        """The receipt filed for this very `result`, if its blocks are still what was measured
        (None otherwise); either way the receipt is used up."""
        held = self._held.pop(id(result), None)
        if held is None:
            return None
        ref, receipt = held
        if ref() is not result or len(result.content) != len(receipt.texts):
            return None
        blocks = zip(result.content, receipt.texts, strict=True)
        if any(visible_text(block) != text for block, text in blocks):
            return None
        return receipt

    def _forget(self, key: int, ref: weakref.ref[ToolResult]) -> None:
        """Drop the receipt of a result that died without being redeemed."""
        held = self._held.get(key)
        if held is not None and held[0] is ref:
            self._held.pop(key, None)
