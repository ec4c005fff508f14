"""What the document store returns: search and read responses, stats, ingest reports.

`SearchResponse.to_text()` and `ReadResponse.to_text()` are exactly what a model reads (compact
JSON, fields left out when None); the store guarantees that text counts at most `max_tokens`.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from ragbudget.models import TruncationInfo

__all__ = [
    "FileProblem",
    "IngestReport",
    "ReadResponse",
    "SearchResponse",
    "SearchResult",
    "StoreStats",
]


class SearchResult(BaseModel):
    """One ranked chunk of a stored document."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(description="Stable chunk id (source, position and content hash).")
    source: str = Field(description="The document's path, as stored.")
    start_line: int = Field(description="First line of the chunk in the document, 1-based.")
    end_line: int = Field(
        description="Last line shown, 1-based inclusive (earlier than the chunk's end when cut)."
    )
    score: float | None = Field(
        default=None, description="Similarity to the query, higher is better (None when concise)."
    )
    text: str = Field(description="The chunk's text (a short snippet when concise).")
    tokens: int | None = Field(
        default=None, description="Tokens in `text` by the response's counter (None when concise)."
    )
    cut: bool | None = Field(
        default=None,
        description="True when `text` was cut to fit the budget (None when concise).",
    )


class SearchResponse(BaseModel):
    """A budgeted page of search results; `to_text()` counts at most the `max_tokens` asked for."""

    model_config = ConfigDict(extra="forbid")

    results: list[SearchResult] = Field(description="Results in rank order.")
    total_count: int = Field(description="Chunks matching the filters (the whole ranked list).")
    returned_count: int = Field(description="Results in this response.")
    truncated: bool = Field(description="True when results were left out or cut for the budget.")
    truncation_info: TruncationInfo = Field(
        description="What the budget kept, dropped and cut on this page (ranks within the page)."
    )
    next_offset: int | None = Field(
        default=None, description="The offset that continues the ranked list; None at its end."
    )
    notice: str | None = Field(
        default=None,
        description="One line telling the model what it is not seeing and how to get it.",
    )

    def to_text(self) -> str:
        """Exactly the text a model reads: this response as compact JSON, None fields left out."""
        return self.model_dump_json(exclude_none=True)


class ReadResponse(BaseModel):
    """Lines of a stored document; `to_text()` counts at most the `max_tokens` asked for."""

    model_config = ConfigDict(extra="forbid")

    source: str = Field(description="The document's path, as stored.")
    text: str = Field(description="The lines shown, joined with newlines.")
    start_line: int | None = Field(default=None, description="First line shown, 1-based.")
    end_line: int | None = Field(default=None, description="Last line shown, 1-based.")
    total_lines: int = Field(description="Lines in the whole document.")
    next_offset: int | None = Field(
        default=None, description="The offset that continues after what is shown; None at the end."
    )
    next_char_offset: int | None = Field(
        default=None,
        description="Set when line `next_offset` is only partly shown: the character to continue "
        "from (pass it as char_offset).",
    )
    truncated: bool = Field(description="True when lines (or part of a line) were left out.")
    notice: str | None = Field(
        default=None,
        description="One line telling the model what it is not seeing and how to get it.",
    )

    def to_text(self) -> str:
        """Exactly the text a model reads: this response as compact JSON, None fields left out."""
        return self.model_dump_json(exclude_none=True)


class StoreStats(BaseModel):
    """What a store holds."""

    model_config = ConfigDict(extra="forbid")

    collection: str = Field(description="Chroma collection name.")
    documents: int = Field(description="Distinct source documents.")
    chunks: int = Field(description="Chunks (Chroma records).")
    embedding: str = Field(description="The collection's embedding ('hashing', 'minilm', ...).")
    counter: str = Field(description="The token counter the stored token counts are in.")
    path: str | None = Field(default=None, description="Embedded database folder, if embedded.")
    server: str | None = Field(default=None, description="Chroma server URL, if a server.")


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
        default_factory=list, description="Binary, too large, empty or non-UTF-8 files."
    )
    chunks_added: int = Field(default=0, description="New chunks written.")
    chunks_deleted: int = Field(default=0, description="Stale chunks removed.")
    sources_pruned: int = Field(
        default=0, description="Documents removed because their file is gone (prune=True)."
    )
    errors: list[FileProblem] = Field(
        default_factory=list, description="Files that could not be read."
    )
