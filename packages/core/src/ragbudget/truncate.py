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
from typing import Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, Field

from ragbudget.counters import CounterSpec, TokenCounter, count_many, get_counter
from ragbudget.fitting import cut_text, largest_prefix
from ragbudget.text import counted

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_LINES",
    "TextTruncation",
    "split_lines",
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


def split_lines(text: str) -> list[str]:
    """`text`'s lines without their newlines (a final newline ends the last line)."""
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
    """The token and byte limits as one counter: `count` measures a rendered output in the
    limiting unit (tokens when there is a token limit, else bytes), and counts anything over
    the other limit as over `limit`, so the budget primitive can search against both."""

    def __init__(
        self, max_tokens: int | None, max_bytes: int | None, counter: TokenCounter
    ) -> None:
        self.max_tokens, self.max_bytes, self.counter = max_tokens, max_bytes, counter
        self.limit: int = max_tokens if max_tokens is not None else (max_bytes or 0)
        self.name, self.exact = counter.name, counter.exact

    def count(self, rendered: str) -> int:
        size = len(rendered.encode("utf-8"))
        if self.max_bytes is not None and size > self.max_bytes:
            return self.limit + 1
        return size if self.max_tokens is None else self.counter.count(rendered)

    def fits(self, rendered: str) -> bool:
        return self.count(rendered) <= self.limit

    def largest(self, render: Callable[[int], str], k_max: int, guess: int) -> int:
        """The most lines (>= 1, at most `k_max`) whose `render` fits; 0 when none does."""
        if k_max < 1:
            return 0
        fitted = largest_prefix(render, k_max, self.limit, self, lower=1, guess=guess)
        return 0 if fitted is None else fitted.size

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


def _may_fit_whole(guess: int, k_max: int) -> bool:
    """Whether the whole text is worth counting: line-by-line sums over-count joined text a
    little (a newline merges with the next line's indentation), never by a quarter."""
    return guess >= k_max * 3 // 4


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
    return split_lines(text), _Limits(max_tokens, max_bytes, get_counter(counter))


def _first_notice_that_fits(body: str, notices: list[str], limits: _Limits) -> str | None:
    for notice in notices:
        if limits.fits(f"{body}\n\n{notice}" if body else notice):
            return notice
    return None


class _Kept(NamedTuple):
    """The most lines that fit with a notice: how many, their text, the limit that bound and
    the notice that fits after them."""

    lines: int
    body: str
    by: Literal["lines", "tokens", "bytes"]
    notice: str | None


def _keep_lines(
    window: Callable[[int], list[str]],
    whole: int,
    max_lines: int,
    limits: _Limits,
    notices: Callable[[int, str], list[str]],
    guess: int,
) -> _Kept | None:
    """The most lines of `window(k)` (the `k` kept lines, from the head or the tail of `whole`
    lines) that fit with the full notice if any line fits with it, else with the short one;
    None when not one line fits."""

    def render(k: int, variant: int) -> str:
        body = "\n".join(window(k))
        return body if k == whole else f"{body}\n\n{notices(k, 'tokens')[variant]}"

    k_max = min(whole, max_lines)
    k = 0
    for variant in (0, 1):
        k = limits.largest(partial(render, variant=variant), k_max, guess)
        if k:
            break
    if not k:
        return None
    body = "\n".join(window(k))
    by: Literal["lines", "tokens", "bytes"] = (
        "lines" if k == max_lines and limits.fits("\n".join(window(k + 1))) else limits.by()
    )
    return _Kept(k, body, by, _first_notice_that_fits(body, notices(k, by), limits))


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

    k_max = min(len(rest), max_lines)
    guess = limits.guess_lines(rest[:k_max])
    if k_max == len(rest) and _may_fit_whole(guess, k_max) and limits.fits("\n".join(rest)):
        return TextTruncation(
            text="\n".join(rest), truncated=False, output_lines=len(rest), total_lines=total,
            start_line=offset if rest else None, end_line=offset + len(rest) - 1 if rest else None,
        )  # fmt: skip
    kept = _keep_lines(lambda k: rest[:k], len(rest), max_lines, limits, notices, guess)
    if kept is not None:
        k = kept.lines
        return TextTruncation(
            text=kept.body, truncated=True, truncated_by=kept.by, output_lines=k,
            total_lines=total, start_line=offset, end_line=offset + k - 1, next_offset=offset + k,
            notice=kept.notice,
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

    k_max = min(total, max_lines)
    tail = lines[total - k_max :][::-1]
    guess = limits.guess_lines(tail)
    if k_max == total and _may_fit_whole(guess, k_max) and limits.fits("\n".join(lines)):
        body = "\n".join(lines)
        return TextTruncation(
            text=body, truncated=False, output_lines=total, total_lines=total,
            start_line=1 if total else None, end_line=total or None,
        )  # fmt: skip
    kept = _keep_lines(lambda k: lines[total - k :], total, max_lines, limits, notices, guess)
    if kept is not None:
        k = kept.lines
        return TextTruncation(
            text=kept.body, truncated=True, truncated_by=kept.by, output_lines=k,
            total_lines=total, start_line=total - k + 1, end_line=total, notice=kept.notice,
        )  # fmt: skip
    return _partial_line(lines[-1], total, total, limits, head=False, where=where)


def _partial_line(
    line: str, number: int, total: int, limits: _Limits, *, head: bool, where: str = ""
) -> TextTruncation:
    """One line alone is over the limit: show the part of it that fits, and say so."""
    size = (
        counted(limits.counter.count(line), "token")
        if limits.max_tokens is not None
        else counted(len(line.encode("utf-8")), "byte")
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

    if head:
        fitted = cut_text(line, limits.limit, limits, render=lambda part: part + suffix)
        return None if fitted is None else line[: fitted.size]
    # The end of the line: the longest prefix of the reversed line, at any character.
    fitted = cut_text(
        line[::-1], limits.limit, limits, render=lambda rev: rev[::-1] + suffix, at_boundary=False
    )
    return None if fitted is None else line[len(line) - fitted.size :]
