"""What `ragbudget serve` was started with: the store to open and the server-wide limits."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from ragbudget.counters import TokenCounter, get_counter
from ragbudget.exact import default_spec
from ragbudget.limits import (
    CLAUDE_MAX_TOKENS_CEILING,
    DEFAULT_MAX_TOKENS_CEILING,
    ESTIMATE_MARGINS,
    profile_names,
    with_estimate_margin,
)

from ragbudget_server._defaults import DEFAULT_CONNECT_TIMEOUT, DEFAULT_READ_TIMEOUT, MAX_TIMEOUT

__all__ = [
    "CLAUDE_MAX_TOKENS_CEILING",
    "DEFAULT_CONNECT_TIMEOUT",
    "DEFAULT_MAX_TOKENS_CEILING",
    "DEFAULT_READ_TIMEOUT",
    "ESTIMATE_MARGINS",
    "MIN_MAX_TOKENS_CEILING",
    "ServerSettings",
    "answer_counter",
    "default_ceiling",
    "server_counter",
]

MIN_MAX_TOKENS_CEILING = 256
"""Below this a clamped response could not hold the clamp notice and one result."""

MAX_MAX_TOKENS_CEILING = 1_000_000
"""The store's own cap on any budget."""


class ServerSettings(BaseModel):
    """The store a server opens and the limits it enforces on every tool call.

    Setup:
        `pip install ragbudget-server`; `ragbudget serve` builds one from its options.

    Key init args:
        db: folder of the embedded Chroma store (default `.ragbudget`; not with `server`).
        server: URL of a Chroma server (`http://host:port`) instead of an embedded store.
        connect_timeout, read_timeout: seconds to wait for that server (10 and 30).
        collection: Chroma collection to search.
        counter: token counter spec (`get_counter`), e.g. `"tiktoken:cl100k_base"`.
        allow_roots: folders the `ingest` tool may index; empty means ingest is disabled.
        allow_hard_links: let `ingest` index hard-linked files (refused by default).
        max_tokens_ceiling: the largest budget any tool call gets; larger asks are clamped.
        client: the client profile every call gets (`ragbudget.limits.PROFILES`); None picks
            each caller's by the name it sends (`clientInfo.name`), else `default`.
        hybrid: fuse the lexical index's ranking with the vectors' in every search (the
            default); False ranks by vectors alone.

    Instantiate:
        ```python
        from ragbudget_server.mcp import ServerSettings, create_server

        settings = ServerSettings(db=".ragbudget", counter="tiktoken:cl100k_base")
        mcp = create_server(settings)
        ```
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    db: Path | None = Field(
        default=None, description="Embedded Chroma store folder (None = `.ragbudget`)."
    )
    server: str | None = Field(
        default=None, description="Chroma server URL (http://host:port); replaces `db`."
    )
    connect_timeout: float = Field(
        default=DEFAULT_CONNECT_TIMEOUT,
        gt=0,
        le=MAX_TIMEOUT,
        description="Seconds to wait for the Chroma `server` to accept a connection.",
    )
    read_timeout: float = Field(
        default=DEFAULT_READ_TIMEOUT,
        gt=0,
        le=MAX_TIMEOUT,
        description="Seconds to wait for each answer of the Chroma `server` to arrive.",
    )
    collection: str = Field(default="documents", description="Chroma collection to serve.")
    embedding: str | None = Field(
        default=None,
        description="Embedding to use: a name ('hashing', 'minilm', any Chroma embedding "
        "function) or a local sentence-transformers model folder; None takes the collection's "
        "own ('hashing' when new).",
    )
    counter: str | None = Field(
        default=None,
        description="Token counter spec for every budget (None = the one the store was built "
        "with, like the CLI).",
    )
    allow_roots: tuple[Path, ...] = Field(
        default=(),
        description="Folders `ingest` may index (resolved, symlinks followed); empty = disabled.",
    )
    allow_hard_links: bool = Field(
        default=False,
        description="Let `ingest` index hard-linked files (st_nlink > 1), whose other names "
        "may lie outside the roots; refused by default.",
    )
    max_tokens_ceiling: int | None = Field(
        default=None,
        description="Server-wide cap on any tool call's max_tokens; larger asks are clamped. "
        "None: 25,000 with the `claude` counter, else 14,500 (see `default_ceiling`).",
    )
    client: str | None = Field(
        default=None,
        description="Client profile for every call (its walls: tokens, characters, bytes); "
        "None: each caller's own, by the clientInfo.name it sends.",
    )
    hybrid: bool = Field(
        default=True,
        description="Fuse the lexical index's BM25 ranking with the vectors' in every search "
        "(identifiers, rare words, Chinese, Japanese and Korean text); False: vectors alone.",
    )
    name: str = Field(default="ragbudget", description="Server name reported to MCP clients.")

    @field_validator("client")
    @classmethod
    def _check_client(cls, value: str | None) -> str | None:
        if value is not None and value not in profile_names():
            msg = f"client must be one of {', '.join(profile_names())}, got {value!r}"
            raise ValueError(msg)
        return value

    @field_validator("max_tokens_ceiling")
    @classmethod
    def _check_ceiling(cls, value: int | None) -> int | None:
        if value is not None and not MIN_MAX_TOKENS_CEILING <= value <= MAX_MAX_TOKENS_CEILING:
            msg = (
                f"max_tokens_ceiling must be between {MIN_MAX_TOKENS_CEILING:,} and "
                f"{MAX_MAX_TOKENS_CEILING:,}, got {value:,}"
            )
            raise ValueError(msg)
        return value

    @field_validator("allow_roots")
    @classmethod
    def _check_roots(cls, roots: tuple[Path, ...]) -> tuple[Path, ...]:
        resolved = []
        for root in roots:
            path = Path(root).expanduser().resolve()
            if not path.is_dir():
                msg = f"allow_roots: {root} is not an existing directory"
                raise ValueError(msg)
            resolved.append(path)
        return tuple(dict.fromkeys(resolved))

    @model_validator(mode="after")
    def _check_location(self) -> ServerSettings:
        if self.server is not None and self.db is not None:
            msg = "give either db (an embedded store) or server (a Chroma server), not both"
            raise ValueError(msg)
        if self.server is not None and not self.server.startswith(("http://", "https://")):
            msg = f"server must be an http:// or https:// URL, got {self.server!r}"
            raise ValueError(msg)
        return self

    @property
    def ingest_enabled(self) -> bool:
        """True when at least one root was allowed."""
        return bool(self.allow_roots)


def default_ceiling(counter: TokenCounter) -> int:
    """The ceiling when none is set: Claude Code's 25,000 for budgets in Claude tokens (the
    `claude` preset), else `DEFAULT_MAX_TOKENS_CEILING`."""
    if counter.name == "claude":
        return CLAUDE_MAX_TOKENS_CEILING
    return DEFAULT_MAX_TOKENS_CEILING


def answer_counter(own: TokenCounter | None) -> TokenCounter:
    """What the server answers with when the settings name no counter: the store's own
    (`own`), except a store built with the estimate (the default before `exact`) or none yet
    open, which get the guarded surfaces' default (`ragbudget.exact.default_spec`: `exact`
    with bpe-openai); the stored counts still size chunks, the answers are exact."""
    if own is not None and own.name != "estimate":
        return own
    return get_counter(default_spec())


def server_counter(counter: TokenCounter, format: str = "text") -> TokenCounter:
    """The counter the server budgets answers in `format` with: `counter` itself when exact,
    else with the estimate's margin for that format on top, named so (`estimate+10%`)."""
    return with_estimate_margin(counter, format)
