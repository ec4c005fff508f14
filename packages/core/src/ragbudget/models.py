"""The public data models: what goes into `fit()` and what comes out of it."""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ragbudget.text import counted

__all__ = ["BudgetResult", "Chunk", "TruncationInfo"]


class Chunk(BaseModel):
    """One retrieved piece of text, as ragbudget ranks and budgets it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(description="Identifier, unique within one call to fit().")
    text: str = Field(description="The text the model will see.")
    score: float | None = Field(
        default=None, description="Relevance score, higher is better; None when unknown."
    )
    metadata: dict[str, Any] = Field(
        default_factory=dict, description="Caller's metadata, passed through untouched."
    )

    @field_validator("score")
    @classmethod
    def _finite_score(cls, value: float | None) -> float | None:
        if value is not None and math.isnan(value):
            msg = "score must be a number or None, got NaN"
            raise ValueError(msg)
        return value


class TruncationInfo(BaseModel):
    """What a fit kept, dropped and cut: truthful, and small enough to show a model."""

    model_config = ConfigDict(extra="forbid")

    truncated: bool = Field(description="True when any chunk was dropped or cut.")
    reason: Literal["token_budget", "chunk_cut"] | None = Field(
        default=None,
        description=(
            "'token_budget' when chunks were dropped, 'chunk_cut' when chunks were only cut, "
            "None when everything fit whole."
        ),
    )
    original_count: int = Field(description="Chunks given to fit().")
    returned_count: int = Field(description="Chunks returned.")
    dropped_ids: list[str] = Field(
        default_factory=list, description="Ids of chunks left out, in rank order."
    )
    cut_ids: list[str] = Field(
        default_factory=list, description="Ids of returned chunks whose text was cut to fit."
    )
    used_tokens: int = Field(description="Sum of the returned chunks' token counts.")
    max_tokens: int = Field(description="The budget.")
    counter: str = Field(description="Name of the token counter used.")
    exact: bool = Field(description="True when the counter is a real tokenizer.")
    next_offset: int | None = Field(
        default=None,
        description=(
            "Rank (0-based, within the chunks given) of the first chunk left out for lack of "
            "budget: where a caller that pages through results continues. None when none was."
        ),
    )

    @classmethod
    def of(
        cls,
        *,
        original_count: int,
        returned_count: int,
        dropped_ids: list[str],
        cut_ids: list[str],
        used_tokens: int,
        max_tokens: int,
        counter: Any,
        next_offset: int | None = None,
    ) -> TruncationInfo:
        """The report of a fit, `truncated` and `reason` following from what was dropped and
        cut, the counter's name and exactness from `counter` (a `TokenCounter`)."""
        truncated, reason = _state(dropped_ids, cut_ids)
        return cls(
            truncated=truncated,
            reason=reason,
            original_count=original_count,
            returned_count=returned_count,
            dropped_ids=dropped_ids,
            cut_ids=cut_ids,
            used_tokens=used_tokens,
            max_tokens=max_tokens,
            counter=counter.name,
            exact=counter.exact,
            next_offset=next_offset,
        )

    def widened(self, *, original_count: int, dropped_ids: list[str]) -> TruncationInfo:
        """This report for a wider input than the fit was given: `original_count` items, of
        which `dropped_ids` (rank order) were left out: those the fit dropped, and those the
        caller left out around it (a cap per source, the duplicates folded into a dropped
        item). The rest stands; `truncated` and `reason` follow by the same rule as `of`."""
        truncated, reason = _state(dropped_ids, self.cut_ids)
        return self.model_copy(
            update={
                "original_count": original_count,
                "dropped_ids": list(dropped_ids),
                "truncated": truncated,
                "reason": reason,
            }
        )

    def summary(self) -> str:
        """One line for a log: what was kept, dropped and cut, in how many tokens."""
        text = f"kept {self.returned_count} of {self.original_count}"
        if self.dropped_ids:
            text += f", {len(self.dropped_ids)} dropped"
        if self.cut_ids:
            text += f", {len(self.cut_ids)} cut"
        return (
            f"{text}; {self.used_tokens:,} of {counted(self.max_tokens, 'token')} ({self.counter})"
        )

    def notice(
        self,
        *,
        offset: int = 0,
        total: int | None = None,
        noun: str = "results",
        offset_hint: str | None = "offset={offset}",
    ) -> str | None:
        """One line telling a model what it is not seeing and how to get it; None if nothing.

        `offset` is where this page started in a longer ranked list and `total` that list's
        length, for callers that page (a search tool); by default the fit's own input.
        `offset_hint` is how the reader continues (`--offset {offset}` on a command line);
        None for a surface that cannot page (a chain's context): the notice then says what is
        left out and nothing about continuing.
        """
        if not self.truncated:
            return None
        shown_total = self.original_count if total is None else total
        text = (
            f"[Showing {self.returned_count} of {shown_total:,} {noun} "
            f"({self.max_tokens:,}-token budget)"
        )
        if len(self.cut_ids) == 1:
            text += f"; {self.cut_ids[0]} cut to fit"
        elif self.cut_ids:
            text += f"; {len(self.cut_ids)} cut to fit"
        if self.next_offset is not None and offset_hint is not None:
            text += f". Use {offset_hint.format(offset=offset + self.next_offset)} to continue"
        return text + "]"


def _state(
    dropped_ids: list[str], cut_ids: list[str]
) -> tuple[bool, Literal["token_budget", "chunk_cut"] | None]:
    """The one rule for `truncated` and `reason`: anything dropped or cut is a truncation;
    the reason is the budget when anything was dropped, the cut when chunks were only cut."""
    if dropped_ids:
        return True, "token_budget"
    return (True, "chunk_cut") if cut_ids else (False, None)


class BudgetResult(BaseModel):
    """What `fit()` returns: the kept chunks with their counts, and the report."""

    model_config = ConfigDict(extra="forbid")

    chunks: list[Chunk] = Field(description="Kept chunks, in the order asked for.")
    info: TruncationInfo = Field(description="What was kept, dropped and cut.")
    tokens: list[int] = Field(description="Token count of each kept chunk, aligned with chunks.")
    ranks: list[int] = Field(
        description="Rank (0 = best) of each kept chunk among the input, aligned with chunks."
    )
