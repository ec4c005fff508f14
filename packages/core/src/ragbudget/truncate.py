"""Head and tail truncation of tool output, with notices a model can act on.

After the rules of the tool-output truncation notes: whichever limit (lines, tokens, bytes) is
hit first wins; output never ends in a partial line, except when one line alone is over the
limit; the notice says which lines are shown and how to continue. With `max_tokens` or
`max_bytes`, the limit holds for the output as rendered (`render()`: text plus notice).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from itertools import accumulate
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from ragbudget._cut import snap_to_boundary
from ragbudget.counters import CounterSpec, TokenCounter, count_many, get_counter

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_LINES",
    "TextTruncation",
    "truncate_head",
    "truncate_tail",
]

DEFAULT_MAX_LINES = 2000
DEFAULT_MAX_BYTES = 30 * 1024
"""Used when neither max_tokens nor max_bytes is given."""


class TextTruncation(BaseModel):
    """Kept text and the report of what was left out."""

    model_config = ConfigDict(extra="forbid")

    text: str = Field(description="The kept lines, joined with newlines (no notice).")
    truncated: bool = Field(description="True when lines (or part of a line) were left out.")
    truncated_by: Literal["lines", "tokens", "bytes"] | None = Field(
        default=None, description="The limit that was hit first."
    )
    output_lines: int = Field(description="Lines shown (a partial line counts as one).")
    total_lines: int = Field(description="Lines in the whole text.")
    start_line: int | None = Field(default=None, description="First line shown, 1-based.")
    end_line: int | None = Field(default=None, description="Last line shown, 1-based.")
    next_offset: int | None = Field(
        default=None, description="Head only: the offset that continues after what is shown."
    )
    partial_line: bool = Field(
        default=False, description="True when the one line shown was itself cut."
    )
    notice: str | None = Field(default=None, description="The line a model reads, if any.")

    def render(self) -> str:
        """What a tool should return: the text, then the notice on its own paragraph."""
        if not self.notice:
            return self.text
        return f"{self.text}\n\n{self.notice}" if self.text else self.notice


def _split_lines(text: str) -> list[str]:
    if not text:
        return []
    lines = text.split("\n")
    if text.endswith("\n"):
        lines.pop()
    return lines


def _check_limit(name: str, value: int | None) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int):
        msg = f"{name} must be an int, got {value!r}"
        raise TypeError(msg)
    if value < (1 if name == "max_lines" else 0):
        msg = f"{name} must be >= {1 if name == 'max_lines' else 0}, got {value}"
        raise ValueError(msg)


class _Limits:
    """Checks a rendered output against the token and byte limits."""

    def __init__(
        self, max_tokens: int | None, max_bytes: int | None, counter: TokenCounter
    ) -> None:
        self.max_tokens, self.max_bytes, self.counter = max_tokens, max_bytes, counter

    def fits(self, rendered: str) -> bool:
        if self.max_bytes is not None and len(rendered.encode("utf-8")) > self.max_bytes:
            return False
        return self.max_tokens is None or self.counter.count(rendered) <= self.max_tokens

    def by(self) -> Literal["tokens", "bytes"]:
        return "tokens" if self.max_tokens is not None else "bytes"

    def unit_limit(self) -> str:
        if self.max_tokens is not None:
            return f"{self.max_tokens:,}-token limit"
        return f"{self.max_bytes:,}-byte limit"

    def guess_lines(self, lines: list[str]) -> int:
        """How many of `lines` fit by adding up per-line sizes: a first guess, checked later."""
        k = len(lines)
        if self.max_bytes is not None:
            sizes = accumulate(len(line.encode("utf-8")) + 1 for line in lines)
            k = min(k, sum(1 for size in sizes if size <= self.max_bytes))
        if self.max_tokens is not None:  # count blocks of lines until the budget is passed
            used, fitting, block = 0, 0, 64
            while fitting < k and used <= self.max_tokens:
                part = lines[fitting : min(k, fitting + block)]
                for n in count_many(self.counter, [line + "\n" for line in part]):
                    used += n
                    if used > self.max_tokens:
                        break
                    fitting += 1
                block *= 2
            k = fitting
        return k

    def max_chars(self) -> int:
        """No part longer than this can fit (a token is never over 64 characters)."""
        bounds = [b for b in (self.max_bytes,) if b is not None]
        if self.max_tokens is not None:
            bounds.append((self.max_tokens + 1) * 64)
        return min(bounds)


def _may_fit_whole(guess: int, k_max: int) -> bool:
    """Whether the whole text is worth counting: line-by-line sums over-count joined text a
    little (a newline merges with the next line's indentation), never by a quarter."""
    return guess >= k_max * 3 // 4


def _nonzero_and(fits: Callable[[int, int], bool], variant: int, k: int) -> bool:
    return k > 0 and fits(k, variant)


def _largest_fitting(k_max: int, first_guess: int, ok: Callable[[int], bool]) -> int:
    """Largest k in [0, k_max] with ok(k) (0 if none): from a guess that is usually right,
    galloping up or bisecting down, so only outputs near the answer's size are counted."""
    k = min(max(first_guess, 0), k_max)
    if ok(k):
        lo, hi, step = k, k_max, 1
        while lo < k_max:
            nxt = min(k_max, lo + step)
            if not ok(nxt):
                hi = nxt - 1
                break
            lo, step = nxt, step * 2
        else:
            return lo
    else:
        lo, hi = 0, k - 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if ok(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo if lo > 0 and ok(lo) else 0


def _prepare(
    text: str, max_lines: int, max_tokens: int | None, max_bytes: int | None, counter: CounterSpec
) -> tuple[list[str], _Limits]:
    if not isinstance(text, str):
        msg = f"text must be a str, got {type(text).__name__}"
        raise TypeError(msg)
    _check_limit("max_lines", max_lines)
    _check_limit("max_tokens", max_tokens)
    _check_limit("max_bytes", max_bytes)
    if max_tokens is None and max_bytes is None:
        max_bytes = DEFAULT_MAX_BYTES
    return _split_lines(text), _Limits(max_tokens, max_bytes, get_counter(counter))


def _first_notice_that_fits(body: str, notices: list[str], limits: _Limits) -> str | None:
    for notice in notices:
        if limits.fits(f"{body}\n\n{notice}" if body else notice):
            return notice
    return None


def truncate_head(
    text: str,
    *,
    max_lines: int = DEFAULT_MAX_LINES,
    max_tokens: int | None = None,
    max_bytes: int | None = None,
    offset: int = 1,
    counter: CounterSpec = None,
) -> TextTruncation:
    """The first lines of `text` from line `offset` (1-based) that fit every limit.

    The notice reads `[Showing lines 1-500 of 5000 (8,192-token limit). Use offset=501 to
    continue]`. `offset` past the last line is a ValueError.
    """
    lines, limits = _prepare(text, max_lines, max_tokens, max_bytes, counter)
    if isinstance(offset, bool) or not isinstance(offset, int) or offset < 1:
        msg = f"offset must be an int >= 1 (a 1-based line number), got {offset!r}"
        raise ValueError(msg)
    total = len(lines)
    if offset > max(total, 1):
        msg = f"offset {offset} is past the end: the text has {total} lines"
        raise ValueError(msg)
    rest = lines[offset - 1 :]

    def notices(k: int, by: str) -> list[str]:
        limit = "" if by == "lines" else f" ({limits.unit_limit()})"
        end = offset + k - 1
        return [
            f"[Showing lines {offset}-{end} of {total}{limit}. Use offset={end + 1} to continue]",
            f"[Use offset={end + 1} to continue]",
        ]

    def fits(k: int, variant: int) -> bool:
        body = "\n".join(rest[:k])
        if k == len(rest):
            return limits.fits(body)
        return limits.fits(f"{body}\n\n{notices(k, 'tokens')[variant]}")

    k_max = min(len(rest), max_lines)
    guess = limits.guess_lines(rest[:k_max])
    if k_max == len(rest) and _may_fit_whole(guess, k_max) and limits.fits("\n".join(rest)):
        return TextTruncation(
            text="\n".join(rest), truncated=False, output_lines=len(rest), total_lines=total,
            start_line=offset if rest else None, end_line=offset + len(rest) - 1 if rest else None,
        )  # fmt: skip
    k = 0
    for variant in (0, 1):  # the full notice if any line fits with it, else the short one
        k = _largest_fitting(k_max, guess, partial(_nonzero_and, fits, variant))
        if k:
            break
    if k > 0:
        body = "\n".join(rest[:k])
        by: Literal["lines", "tokens", "bytes"] = (
            "lines" if k == max_lines and limits.fits("\n".join(rest[: k + 1])) else limits.by()
        )
        notice = _first_notice_that_fits(body, notices(k, by), limits)
        return TextTruncation(
            text=body, truncated=True, truncated_by=by, output_lines=k, total_lines=total,
            start_line=offset, end_line=offset + k - 1, next_offset=offset + k, notice=notice,
        )  # fmt: skip
    return _partial_line(rest[0], offset, total, limits, head=True)


def truncate_tail(
    text: str,
    *,
    max_lines: int = DEFAULT_MAX_LINES,
    max_tokens: int | None = None,
    max_bytes: int | None = None,
    counter: CounterSpec = None,
    full_output_path: str | None = None,
) -> TextTruncation:
    """The last lines of `text` that fit every limit (for command output, logs).

    The notice reads `[Showing lines 4801-5000 of 5000 (8,192-token limit). Full output: PATH]`
    when `full_output_path` is given.
    """
    lines, limits = _prepare(text, max_lines, max_tokens, max_bytes, counter)
    total = len(lines)
    where = f". Full output: {full_output_path}" if full_output_path else ""

    def notices(k: int, by: str) -> list[str]:
        limit = "" if by == "lines" else f" ({limits.unit_limit()})"
        return [f"[Showing lines {total - k + 1}-{total} of {total}{limit}{where}]", "[Truncated]"]

    def fits(k: int, variant: int) -> bool:
        body = "\n".join(lines[total - k :])
        if k == total:
            return limits.fits(body)
        return limits.fits(f"{body}\n\n{notices(k, 'tokens')[variant]}")

    k_max = min(total, max_lines)
    tail = lines[total - k_max :][::-1]
    guess = limits.guess_lines(tail)
    if k_max == total and _may_fit_whole(guess, k_max) and limits.fits("\n".join(lines)):
        body = "\n".join(lines)
        return TextTruncation(
            text=body, truncated=False, output_lines=total, total_lines=total,
            start_line=1 if total else None, end_line=total or None,
        )  # fmt: skip
    k = 0
    for variant in (0, 1):  # the full notice if any line fits with it, else the short one
        k = _largest_fitting(k_max, guess, partial(_nonzero_and, fits, variant))
        if k:
            break
    if k > 0:
        body = "\n".join(lines[total - k :])
        by: Literal["lines", "tokens", "bytes"] = (
            "lines"
            if k == max_lines and limits.fits("\n".join(lines[total - k - 1 :]))
            else limits.by()
        )
        notice = _first_notice_that_fits(body, notices(k, by), limits)
        return TextTruncation(
            text=body, truncated=True, truncated_by=by, output_lines=k, total_lines=total,
            start_line=total - k + 1, end_line=total, notice=notice,
        )  # fmt: skip
    return _partial_line(lines[-1], total, total, limits, head=False, where=where)


def _partial_line(
    line: str, number: int, total: int, limits: _Limits, *, head: bool, where: str = ""
) -> TextTruncation:
    """One line alone is over the limit: show the part of it that fits, and say so."""
    size = (
        f"{limits.counter.count(line):,} tokens"
        if limits.max_tokens is not None
        else f"{len(line.encode('utf-8')):,} bytes"
    )
    if head:
        tail_hint = f" Use offset={number + 1} to continue" if number < total else ""
        notice_full = (
            f"[Line {number} is {size}, over the {limits.unit_limit()}; "
            f"showing its start.{tail_hint}]"
        )
    else:
        notice_full = (
            f"[Line {number} is {size}, over the {limits.unit_limit()}; showing its end{where}]"
        )
    short = f"[Use offset={number + 1} to continue]" if head and number < total else "[Truncated]"
    notices = [notice_full, short]
    shown = ""
    notice: str | None = None
    for candidate in notices:
        suffix = "\n\n" + candidate
        part = _cut_line(line, suffix, limits, head=head)
        if part is not None:
            shown, notice = part, candidate
            break
    return TextTruncation(
        text=shown, truncated=True, truncated_by=limits.by(), output_lines=1 if shown else 0,
        total_lines=total, start_line=number if shown else None, end_line=number if shown else None,
        next_offset=number + 1 if head and shown and number < total else None,
        partial_line=bool(shown), notice=notice,
    )  # fmt: skip


def _cut_line(line: str, suffix: str, limits: _Limits, *, head: bool) -> str | None:
    """The longest part of `line` (its start, or its end) that fits with `suffix`; the start is
    cut back to a word boundary when one is near."""
    if not limits.fits(suffix.lstrip()):
        return None

    def part(n: int) -> str:
        return line[:n] if head else line[len(line) - n :]

    n = _largest_fitting(
        min(len(line), limits.max_chars()), 0, lambda n: limits.fits(part(n) + suffix)
    )
    if head:
        return line[: snap_to_boundary(line, n)] if n < len(line) else line
    return part(n)
