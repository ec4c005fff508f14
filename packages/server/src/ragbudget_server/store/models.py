"""What the document store returns: search and read responses, stats, ingest reports.

`SearchResponse.to_text()` and `ReadResponse.to_text()` are exactly what a model reads: by
default a lean text (each result's text verbatim under a one-line header, the notice once), or
compact JSON with `format="json"`. The store guarantees that text counts at most `max_tokens`,
and says how many it counts in `used_tokens`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Literal, Protocol, Self

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

__all__ = [
    "FileProblem",
    "Format",
    "IngestReport",
    "ReadResponse",
    "SearchResponse",
    "SearchResult",
    "StoreStats",
]


Format = Literal["text", "json"]
"""How a response renders for a model: `"text"` (each result's text verbatim under a one-line
header, the notice once) or `"json"` (the whole response as compact JSON)."""


class _Rendered(BaseModel):
    """A response the store rendered in `format` and counted: the count travels with it
    (`used_tokens`, and `measured()` for the server's last check, which needs no recount)."""

    model_config = ConfigDict(extra="forbid")

    used_tokens: int = Field(
        default=0, description="Tokens of this whole answer as rendered in `format`."
    )
    max_tokens: int = Field(default=0, description="The budget the answer was fitted to.")
    counter: str = Field(default="", description="The counter `used_tokens` is measured with.")
    format: Format = Field(default="text", description="How the answer renders for a model.")
    notice: str | None = Field(
        default=None,
        description="One line telling the model what it is not seeing and how to get it.",
    )

    _measured: tuple[str, int] | None = PrivateAttr(default=None)

    def to_text(self) -> str:
        """Exactly the text a model reads, in this response's `format`."""
        if self.format == "json":
            return self.model_dump_json(exclude_none=True)
        return self.render_text()

    def render_text(self) -> str:  # pragma: no cover - each response renders itself
        raise NotImplementedError

    def measured(self) -> tuple[str, int] | None:
        """`(to_text(), its token count)` as the store measured them within the budget; None
        for a response the store did not budget (e.g. built by hand)."""
        return self._measured

    def with_measure(self, text: str, tokens: int) -> Self:
        """This response, marked with the rendering and count the store measured."""
        self._measured = (text, tokens)
        return self


class SearchResult(BaseModel):
    """One ranked chunk of a stored document."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(description="Stable chunk id (source, position and content hash).")
    source: str = Field(description="The document's path, as stored.")
    start_line: int = Field(description="First line of the chunk in the document, 1-based.")
    end_line: int = Field(
        description="Last line shown, 1-based inclusive (earlier than the chunk's end when cut)."
    )
    pages: str | None = Field(
        default=None,
        description="Where the lines shown lie in the original document ('page 3', 'pages "
        "3-4', 'slide 2'), for PDFs and presentations; None for other files.",
    )
    score: float | None = Field(
        default=None, description="Similarity to the query, higher is better (None when concise)."
    )
    text: str = Field(description="The chunk's text, verbatim (a short snippet when concise).")
    tokens: int | None = Field(
        default=None, description="Tokens in `text` by the response's counter (None when concise)."
    )
    cut: bool | None = Field(
        default=None,
        description="True when `text` was cut to fit the budget (None when concise).",
    )
    merged_ids: list[str] | None = Field(
        default=None,
        description=(
            "Ids of later-ranked chunks of the same file merged into this span (their overlap "
            "shown once); None when none were."
        ),
    )
    duplicate_ids: list[str] | None = Field(
        default=None,
        description="Ids of (near-)duplicate chunks left out for this one; None when none were.",
    )

    def header(self, rank: int, prefix: str = "") -> str:
        """The one line a model reads above this result's text (its source less `prefix`)."""
        line = f"[{rank}] {self.source.removeprefix(prefix)}:{self.start_line}-{self.end_line}"
        if self.pages:
            line += f" ({self.pages})"
        if self.score is not None:
            line += f" score={self.score:.2f}"
        return line + (" (cut to fit)" if self.cut else "")


class SearchResponse(_Rendered):
    """A budgeted page of search results; `to_text()` counts at most the `max_tokens` asked for."""

    model_config = ConfigDict(extra="forbid")

    results: list[SearchResult] = Field(description="Results in rank order.")
    total_count: int = Field(description="Chunks matching the filters (the whole ranked list).")
    offset: int = Field(default=0, description="Rank (0-based) of this page's first result.")
    next_offset: int | None = Field(
        default=None, description="The offset that continues the ranked list; None at its end."
    )
    truncated: bool = Field(description="True when the budget left results out or cut one.")
    capped_ids: list[str] | None = Field(
        default=None,
        description=(
            "Ids on this page left out by the cap per file (`max_per_source`); later pages do "
            "not show them. None when the cap left none out."
        ),
    )

    next_cursor: str | None = Field(
        default=None,
        description=(
            "Pass as `cursor` (with the same query and filters) to continue the ranking this "
            "search's first page made; it lasts an hour. None at the ranking's end."
        ),
    )
    store_changed: bool | None = Field(
        default=None,
        description="True when the store changed since the cursor's first page (the pages "
        "keep the ranking made then); None otherwise.",
    )
    gone_ids: list[str] | None = Field(
        default=None,
        description="Ids of the cursor's ranking this page reached that are no longer stored.",
    )

    def accounted_ids(self) -> list[str]:
        """Every ranked id this page accounts for: each result's, the ids merged into it and
        its duplicates, the ids the cap per file left out, and those gone from the store.
        Pages walked by `next_cursor` (or, on an unchanged store, `next_offset`) account for
        each ranked id exactly once."""
        return accounted_ids(self.results, self.capped_ids) + list(self.gone_ids or ())

    def render_text(self) -> str:
        """Each result's header line and verbatim text, then the notice once. When several
        results share a folder, it is said once on top and left out of their headers
        (`read_document` takes a source's unique end as well as its full path)."""
        prefix = shared_folder([r.source for r in self.results])
        parts = [f"[Paths relative to {prefix}]"] if prefix else []
        parts += [
            f"{r.header(rank, prefix)}\n{r.text}"
            for rank, r in enumerate(self.results, start=self.offset + 1)
        ]
        if self.notice:
            parts.append(self.notice)
        return "\n\n".join(parts)


class _Ranked(Protocol):
    id: str
    merged_ids: list[str] | None
    duplicate_ids: list[str] | None


def accounted_ids(results: Sequence[_Ranked], capped: list[str] | None) -> list[str]:
    """The ranked ids a page of `results` accounts for: each result's own, those merged into
    it, its duplicates, then the ids the cap per file left out (`capped`)."""
    ids: list[str] = []
    for r in results:
        ids += [r.id, *(r.merged_ids or ()), *(r.duplicate_ids or ())]
    return ids + list(capped or ())


def shared_folder(sources: list[str]) -> str:
    """The folder (ending in '/') every one of two or more `sources` lies under, when it is
    long enough to be worth saying once; else ''."""
    if len(sources) < 2 or not all(s.startswith("/") for s in sources):
        return ""
    folder = os.path.commonpath(sources)
    if folder in sources:  # all the same file: its folder
        folder = os.path.dirname(folder)
    return folder + "/" if len(folder) > 12 else ""


class ReadResponse(_Rendered):
    """Lines of a stored document; `to_text()` counts at most the `max_tokens` asked for."""

    model_config = ConfigDict(extra="forbid")

    source: str = Field(description="The document's path, as stored.")
    text: str = Field(description="The lines shown, joined with newlines, verbatim.")
    start_line: int | None = Field(default=None, description="First line shown, 1-based.")
    end_line: int | None = Field(default=None, description="Last line shown, 1-based.")
    total_lines: int = Field(description="Lines in the whole document.")
    pages: str | None = Field(
        default=None,
        description="The pages (or slides) the lines shown lie on, for PDFs and presentations.",
    )
    next_offset: int | None = Field(
        default=None, description="The offset that continues after what is shown; None at the end."
    )
    next_char_offset: int | None = Field(
        default=None,
        description="Set when line `next_offset` is only partly shown: the character to continue "
        "from (pass it as char_offset).",
    )
    truncated: bool = Field(description="True when lines (or part of a line) were left out.")

    def render_text(self) -> str:
        """A header line (source and lines), the lines verbatim, then the notice once."""
        if self.start_line is None:
            head = f"{self.source} ({self.total_lines:,} lines)"
        else:
            head = f"{self.source}:{self.start_line}-{self.end_line} of {self.total_lines:,} lines"
            head += f" ({self.pages})" if self.pages else ""
        parts = [f"{head}\n{self.text}" if self.text else head]
        if self.notice:
            parts.append(self.notice)
        return "\n\n".join(parts)


MAX_STATS_SKIPPED = 50
"""Most skipped files `stats` lists (the count says how many there are)."""


class StoreStats(BaseModel):
    """What a store holds."""

    model_config = ConfigDict(extra="forbid")

    collection: str = Field(description="Chroma collection name.")
    documents: int = Field(description="Distinct source documents.")
    chunks: int = Field(description="Chunks (Chroma records).")
    embedding: str = Field(
        description="The collection's embedding ('hashing', 'minilm', ...; a model folder's "
        "embedding adds its path: 'sentence_transformer /opt/models/minilm')."
    )
    counter: str = Field(description="The token counter the stored token counts are in.")
    path: str | None = Field(default=None, description="Embedded database folder, if embedded.")
    server: str | None = Field(default=None, description="Chroma server URL, if a server.")
    files_skipped: list[FileProblem] = Field(
        default_factory=list,
        description="Files the ingests left out, each with its reason (the first "
        "`MAX_STATS_SKIPPED` by path).",
    )
    files_skipped_count: int = Field(
        default=0, description="How many files the ingests left out in all."
    )
    lexical: str = Field(
        default="on",
        description="The lexical index hybrid search fuses with the vectors: 'on', or why not.",
    )


class FileProblem(BaseModel):
    """A file left out of an ingest, and why."""

    model_config = ConfigDict(extra="forbid")

    path: str = Field(description="The file.")
    reason: str = Field(description="Why it was left out.")


class IngestReport(BaseModel):
    """What one `DocumentStore.ingest` call did."""

    model_config = ConfigDict(extra="forbid")

    files_seen: int = Field(default=0, description="Files found by the walk.")
    files_ingested: int = Field(default=0, description="Files (re)chunked and written.")
    files_unchanged: int = Field(default=0, description="Files already stored exactly as they are.")
    files_skipped: list[FileProblem] = Field(
        default_factory=list,
        description="Files not indexed, each with its reason: binary, too large, empty, no "
        "detectable encoding, encrypted, no text layer, conversion failed, a link not "
        "followed, not a regular file, refused by the server.",
    )
    files_removed: list[FileProblem] = Field(
        default_factory=list,
        description="Files indexed before that can no longer be (empty, binary, too large, "
        "refused): their stored chunks were removed, and why.",
    )
    chunks_added: int = Field(default=0, description="New chunks written.")
    chunks_deleted: int = Field(default=0, description="Stale chunks removed.")
    sources_pruned: int = Field(
        default=0, description="Documents removed because their file is gone (prune=True)."
    )
    sources_stale: int = Field(
        default=0,
        description="Documents under the paths whose file is gone but which are still "
        "searchable (prune=False): ingest again with prune to remove them.",
    )
    errors: list[FileProblem] = Field(
        default_factory=list, description="Files that could not be read."
    )
    problems_omitted: int = Field(
        default=0,
        description="Entries left out of files_skipped, files_removed and errors so that the "
        "report fits a budget (the MCP server's ceiling); 0 when every entry is listed.",
    )
