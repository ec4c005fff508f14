"""`ragbudget search --explain`: a picture of what a budget kept, cut and dropped (rich)."""

from __future__ import annotations

from ragbudget.text import counted
from rich.console import Group, RenderableType
from rich.markup import escape
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text

from ragbudget_server.store import SearchResponse

__all__ = ["explain_search"]

Candidate = tuple[str, str, float, "int | None"]
"""(id, source, score, stored token count), as `DocumentStore.candidates` gives them."""

_STYLE = {
    "kept": "green",
    "cut": "yellow",
    "merged": "cyan",
    "duplicate": "cyan",
    "capped": "magenta",
    "dropped": "red",
    "not reached": "dim",
}


def explain_search(response: SearchResponse, candidates: list[Candidate]) -> RenderableType:
    """A table of the ranked candidates (rank, score, tokens, what the answer did with each:
    kept, cut, merged into a span, left out as a duplicate or by the cap per file, dropped
    where the budget ran out, not reached) and a bar of the budget the answer spends."""
    kept = {r.id: r for r in response.results}
    folded = {m: "merged" for r in response.results for m in r.merged_ids or ()}
    folded.update({d: "duplicate" for r in response.results for d in r.duplicate_ids or ()})
    folded.update(dict.fromkeys(response.capped_ids or (), "capped"))
    first_out = response.next_offset if response.next_offset is not None else len(candidates)
    table = Table(title=f"{len(candidates)} candidates, {response.max_tokens:,}-token budget")
    for column, justify in (("rank", "right"), ("score", "right"), ("tokens", "right"),
                            ("status", "left"), ("source", "left")):  # fmt: skip
        table.add_column(column, justify=justify)  # type: ignore[arg-type]
    for rank, (id_, source, score, tokens) in enumerate(candidates, start=response.offset):
        result = kept.get(id_)
        if result is not None:
            status = "cut" if result.cut else "kept"
            shown = result.tokens if result.tokens is not None else tokens
        else:
            status = folded.get(id_) or ("dropped" if rank == first_out else "not reached")
            shown = tokens
        table.add_row(
            str(rank + 1),
            f"{score:.3f}",
            f"{shown:,}" if shown is not None else "?",
            Text(status, style=_STYLE[status]),
            escape(source),
        )
    share = response.used_tokens / response.max_tokens if response.max_tokens else 0.0
    bar = ProgressBar(total=max(response.max_tokens, 1), completed=response.used_tokens, width=50)
    caption = Text(
        f"{response.used_tokens:,} of {counted(response.max_tokens, 'token')} ({share:.0%}) by "
        f"{response.counter}; next offset: {response.next_offset}"
    )
    return Group(table, bar, caption)
