"""The four MCP tools: budgeted `search`, paged `read_document`, rooted `ingest`, and `stats`.

What the model reads: each answer is one text block and no structured content (clients that
forward `structuredContent` then forward the text; see `answers`), so every client's model
reads the passages, the notice and the way to continue, and the walls are checked on that
block. `format="json"` makes the block the whole response as JSON, for programs; the page's
fields are also in `_meta["ragbudget"]`, which no client shows its model. The block's count
travels with the result to the server's `TokenBudgetMiddleware` (`ServerState.measured`), so
each answer is counted once.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import partial
from typing import Annotated, Any, Literal, TypeVar

import anyio
import anyio.from_thread
import anyio.to_thread
from fastmcp import Context, FastMCP
from fastmcp.exceptions import ToolError
from fastmcp.tools import Tool, ToolResult
from mcp_types import TextContent, ToolAnnotations
from pydantic import BaseModel, ConfigDict, Field
from ragbudget.counters import TokenCounter
from ragbudget.limits import WalledCounter, profile_names
from ragbudget.middleware.clients import client_name
from ragbudget.text import shown

from ragbudget_server.mcp.answers import Ask, BudgetExceededError, fit_answer
from ragbudget_server.mcp.client import log_if_asked
from ragbudget_server.mcp.errors import refuse
from ragbudget_server.mcp.reports import answer_json, answer_units, fit_listing, fit_report
from ragbudget_server.mcp.roots import OutsideRootsError, check_ingest_paths, linked_file_reason
from ragbudget_server.mcp.settings import ServerSettings
from ragbudget_server.mcp.state import ServerState
from ragbudget_server.store import (
    IngestReport,
    ReadResponse,
    SearchResponse,
    StoreError,
    StoreStats,
)

__all__ = ["STATE_KEY", "ServerState", "ServerStats", "register_tools"]

logger = logging.getLogger(__name__)

STATE_KEY = "ragbudget"
"""Key of the `ServerState` in the lifespan context."""

MAX_LIMIT = 200
"""Most results one `search` may rank (a larger ask is an argument error)."""

MAX_PATH_CHARS = 4096
"""Longest path argument (Linux's PATH_MAX); longer ones are argument errors."""

MAX_LINE = 1 << 31
"""Largest line number or line count `read_document` takes (the store's own cap)."""

R = TypeVar("R", SearchResponse, ReadResponse)

FormatArg = Annotated[
    Literal["text", "json"],
    Field(
        description=(
            "'text' (default): each result's text verbatim under a one-line header, the "
            "fewest tokens per result; 'json': the whole response as JSON text."
        )
    ),
]


class ServerStats(BaseModel):
    """What `stats` reports: the store's own figures plus this server's limits."""

    model_config = ConfigDict(extra="forbid")

    store: StoreStats = Field(description="Collections, chunk counts, embedding and counter.")
    counter: str = Field(description="Counter every budget of this server is measured with.")
    counter_exact: bool = Field(description="True for a real tokenizer, False for an estimate.")
    max_tokens_ceiling: int = Field(description="Largest max_tokens any call gets.")
    ingest_roots: list[str] = Field(description="Folders `ingest` may index; empty = disabled.")
    client_profile: str = Field(description="The client profile in force for this caller.")
    client_walls: str = Field(description="Its walls, in words (tokens by `answer_counter`).")
    answer_counter: str = Field(description="What this caller's answers are counted with.")
    client_profile_source: str = Field(description="Where the profile's walls come from.")
    profiles: list[str] = Field(description="Every profile `--client` takes.")


async def _state(ctx: Context) -> ServerState:
    """The shared state, its store open (a store that cannot open is this call's error)."""
    state = ctx.lifespan_context.get(STATE_KEY)
    if not isinstance(state, ServerState):  # pragma: no cover - only without our lifespan
        msg = "the ragbudget store is not open: build the server with create_server()"
        raise ToolError(msg)
    try:
        await state.ready()
    except StoreError as exc:
        raise refuse(exc) from exc
    return state


async def _ask(ctx: Context, state: ServerState, max_tokens: int, format: str) -> Ask:
    """This call's budget: the caller's profile, its walls in the counter's tokens, capped by
    the server's ceiling and the ask."""
    profile = state.profile(client_name(ctx))
    counter = state.counter_for_profile(format, profile)
    walls = profile.walls(counter)
    walls = walls.with_tokens(min(walls.tokens, state.ceiling, max_tokens))
    return Ask(profile=profile, walls=walls, requested=max_tokens, counter=counter)


async def _budgeted(
    ctx: Context,
    state: ServerState,
    ask: Ask,
    fetch: Callable[[int, TokenCounter], R],
    what: str,
) -> ToolResult:
    """Run a store call within the caller's walls: one text block (`fit_answer`), counted
    once; the count goes to the server's guard with the result (`ServerState.measured`)."""
    try:
        fitted = await anyio.to_thread.run_sync(fit_answer, ask, fetch)
    except (StoreError, BudgetExceededError) as exc:
        raise refuse(exc, ask.walls.tokens, WalledCounter(ask.counter, ask.walls)) from exc
    if fitted.bound is not None:
        walls = f"client profile {ask.profile.name}: {ask.walls.describe()}"
        await log_if_asked(ctx, "warning", f"{what}: stopped at the {fitted.bound} wall ({walls})")
    result = ToolResult(
        content=[TextContent(type="text", text=fitted.text)],
        meta={"ragbudget": fitted.page},
    )
    return state.measured(result, fitted.tokens, ask.counter)  # counted once


async def search(
    query: Annotated[
        str,
        Field(
            description="What to look for, in words or code identifiers.",
            min_length=1,
            max_length=4000,
        ),
    ],
    ctx: Context,
    limit: Annotated[
        int,
        Field(description="Most results to rank before the budget applies.", ge=1, le=MAX_LIMIT),
    ] = 10,
    max_tokens: Annotated[
        int,
        Field(
            description=(
                "Token budget for the whole response text; the server caps it at its ceiling "
                "(see `stats`)."
            ),
            ge=1,
        ),
    ] = 8192,
    concise: Annotated[
        bool, Field(description="Short snippets and fewer fields, to scan more results.")
    ] = False,
    file_type: Annotated[
        str | None,
        Field(
            description="Only files of this type, e.g. 'py' or 'md'.", min_length=1, max_length=32
        ),
    ] = None,
    directory: Annotated[
        str | None,
        Field(
            description="Only files under this folder: a full path, or the end of one as "
            "answers print paths (`json`, `docs/office`).",
            min_length=1,
            max_length=MAX_PATH_CHARS,
        ),
    ] = None,
    format: FormatArg = "text",
    evidence: Annotated[
        bool,
        Field(
            description=(
                "Merge adjacent chunks of a file into one span, leave duplicates out, and under "
                "tight budgets show the best-matching lines of long results (false: the ranked "
                "prefix of whole chunks)."
            )
        ),
    ] = True,
    max_per_source: Annotated[
        int | None, Field(description="Most results per file (with evidence).", ge=1, le=1000)
    ] = None,
    cursor: Annotated[
        str | None,
        Field(
            description=(
                "Continue a search: the next_cursor of its last page (same query and filters). "
                "A cursor keeps the ranking the first page made, so pages never repeat or skip "
                "a result; it lasts 1 hour, after which search again without it."
            ),
            min_length=3,
            max_length=40,
        ),
    ] = None,
) -> ToolResult:
    """Search the indexed documents; the response always fits `max_tokens`.

    Results are ranked chunks with their source file and line span. When the budget cuts the
    list short, the response says how many were left out and the `cursor` to continue with
    (it lasts 1 hour; an expired one is an error: search again); adjacent chunks of one file
    come back as one span. Read a whole file with `read_document`.
    """
    state = await _state(ctx)
    ask = await _ask(ctx, state, max_tokens, format)

    def fetch(budget: int, counter: TokenCounter) -> SearchResponse:
        return state.store.search(
            query,
            limit=limit,
            max_tokens=budget,
            concise=concise,
            file_type=file_type,
            directory=directory,
            counter=counter,
            format=format,
            evidence=evidence,
            max_per_source=max_per_source,
            cursor=cursor,
            hybrid=state.settings.hybrid,
            stated_budget=ask.walls.tokens,  # the whole answer's, the server's line included
        )

    return await _budgeted(ctx, state, ask, fetch, f"search {shown(query)}")


async def read_document(
    source: Annotated[
        str,
        Field(
            description="The document's `source`, as a search result gives it.",
            min_length=1,
            max_length=MAX_PATH_CHARS,
        ),
    ],
    ctx: Context,
    offset: Annotated[
        int,
        Field(
            description="First line to return (1-based); use the offset a notice gives.",
            ge=1,
            le=MAX_LINE,
        ),
    ] = 1,
    limit: Annotated[
        int | None,
        Field(
            description="Most lines to return (None = as many as the budget allows).",
            ge=1,
            le=MAX_LINE,
        ),
    ] = None,
    max_tokens: Annotated[
        int,
        Field(
            description="Token budget for the page; the server caps it at its ceiling.",
            ge=1,
        ),
    ] = 8192,
    char_offset: Annotated[
        int,
        Field(
            description="Start inside line `offset` at this character: give the char_offset a "
            "notice names when one line alone is over the budget.",
            ge=0,
        ),
    ] = 0,
    format: FormatArg = "text",
    page: Annotated[
        int | None,
        Field(
            description="Start at this page of a PDF (or slide of a presentation), as a "
            "search result cites it, instead of `offset`.",
            ge=1,
            le=MAX_LINE,
        ),
    ] = None,
) -> ToolResult:
    """Read a stored document by lines, one budgeted page at a time.

    A page that stops early ends with a notice naming the `offset` of the next line, so a
    document far larger than any budget can be read in full, page by page. A line alone over
    the budget (minified code) comes in parts, continued with `offset` and `char_offset`.
    """
    state = await _state(ctx)
    ask = await _ask(ctx, state, max_tokens, format)

    def fetch(budget: int, counter: TokenCounter) -> ReadResponse:
        return state.store.read(
            source, offset=offset, limit=limit, max_tokens=budget,
            counter=counter, format=format, char_offset=char_offset, page=page,
            stated_budget=ask.walls.tokens,  # the whole answer's, the server's line included
        )  # fmt: skip

    return await _budgeted(ctx, state, ask, fetch, f"read_document {shown(source)}")


async def ingest(
    paths: Annotated[
        list[Annotated[str, Field(min_length=1, max_length=MAX_PATH_CHARS)]],
        Field(
            description="Files or folders to index; each must lie under a root the server allows.",
            min_length=1,
            max_length=100,
        ),
    ],
    ctx: Context,
    prune: Annotated[
        bool,
        Field(
            description="Remove the documents under `paths` whose file is gone (false: keep "
            "them searchable; the report counts them in sources_stale)."
        ),
    ] = True,
) -> ToolResult:
    """Index files and folders under the server's allowed roots (idempotent): text, code,
    PDF (cited by page), Word, PowerPoint, Excel, CSV, HTML and e-mail.

    Unchanged files are skipped, changed ones replace their old chunks, files that can no
    longer be indexed lose them, and deleted files leave the index (unless `prune` is false).
    Every file left out is named with its reason in `files_skipped`. Paths outside the
    allowed roots, including through symlinks, are refused; so are hard-linked files unless
    the server allows them. The report fits the caller's walls: long lists of files are cut
    (`problems_omitted`).
    """
    state = await _state(ctx)
    try:
        checked = check_ingest_paths(paths, state.settings.allow_roots)
    except OutsideRootsError as exc:
        raise refuse(exc) from exc

    def on_progress(done: int, total: int, path: str) -> None:
        anyio.from_thread.run(partial(ctx.report_progress, done, total, path))

    roots, hard_links = state.settings.allow_roots, state.settings.allow_hard_links
    call = partial(
        state.store.ingest,
        [str(p) for p in checked],
        prune=prune,
        on_progress=on_progress,
        refuse=partial(linked_file_reason, roots=roots, allow_hard_links=hard_links),
    )
    async with state.ingest_lock:
        try:
            report: IngestReport = await anyio.to_thread.run_sync(call)
        except StoreError as exc:
            raise refuse(exc) from exc
    walled = _listing_counter(ctx, state)
    fitted = fit_report(report, walled.walls.tokens, walled)
    return _listing_result(state, fitted, walled, fitted.problems_omitted)


def _listing_counter(ctx: Context, state: ServerState) -> WalledCounter:
    """What a JSON answer to this caller is counted with: its profile's walls, the token
    wall capped by the server's ceiling."""
    profile = state.profile(client_name(ctx))
    counter = state.counter_for_profile("json", profile)
    walls = profile.walls(counter)
    return WalledCounter(counter, walls.with_tokens(min(walls.tokens, state.ceiling)))


def _listing_result(
    state: ServerState, answer: BaseModel, walled: WalledCounter, omitted: int
) -> ToolResult:
    """`answer` (fitted by `fit_listing`) as its JSON text block (no structured content: see
    `answers`), vouched for with the server's guard (which then does not count or cut it)
    when it fits the walls; an answer over them even with its lists emptied (a tiny
    ceiling) is left to the guard to cut, never vouched for."""
    text = answer_json(answer)
    units = answer_units(answer, walled)
    result = ToolResult(
        content=[TextContent(type="text", text=text)],
        meta={
            "ragbudget": {
                "walls": walled.walls.describe(),
                "answer_units": units,
                "counter": walled.name,
                "entries_omitted": omitted,
            }
        },
    )
    if units > walled.walls.tokens:
        return result
    return state.measured(result, walled.inner.count(text), walled.inner)


def _trim_stats(answer: ServerStats, keep: int) -> ServerStats:
    store = answer.store.model_copy(update={"files_skipped": answer.store.files_skipped[:keep]})
    return answer.model_copy(update={"store": store})


async def stats(ctx: Context) -> ToolResult:
    """What is indexed (collections, chunk counts, embedding, counter) and this server's limits."""
    state = await _state(ctx)
    try:
        store_stats: StoreStats = await anyio.to_thread.run_sync(state.store.stats)
    except StoreError as exc:
        raise refuse(exc) from exc
    profile = state.profile(client_name(ctx))
    counter = state.counter_for_profile("text", profile)
    answer = ServerStats(
        store=store_stats,
        counter=state.counter.name,
        counter_exact=state.counter.exact,
        max_tokens_ceiling=state.ceiling,
        ingest_roots=[str(root) for root in state.settings.allow_roots],
        client_profile=profile.name,
        client_walls=profile.walls(counter).describe(),
        answer_counter=counter.name,
        client_profile_source=profile.source,
        profiles=list(profile_names()),
    )
    walled = _listing_counter(ctx, state)
    listed = len(store_stats.files_skipped)
    fitted = fit_listing(answer, listed, _trim_stats, walled.walls.tokens, walled)
    omitted = store_stats.files_skipped_count - len(fitted.store.files_skipped)
    return _listing_result(state, fitted, walled, omitted)


_READ_ONLY = ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False)


def register_tools(mcp: FastMCP[Any], settings: ServerSettings) -> None:
    """Add the tools to `mcp`; `ingest` only when `settings` allows at least one root."""
    add = mcp.add_tool
    for tool in (search, read_document, stats):
        add(Tool.from_function(tool, annotations=_READ_ONLY, output_schema=None))
    if settings.ingest_enabled:
        add(
            Tool.from_function(
                ingest,
                annotations=ToolAnnotations(
                    read_only_hint=False,
                    destructive_hint=False,
                    idempotent_hint=True,
                    open_world_hint=False,
                ),
                output_schema=None,
            )
        )
