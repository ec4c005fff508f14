"""`create_server`: the FastMCP server over one shared `DocumentStore`, opened in the lifespan."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial
from typing import Any

from fastmcp import FastMCP
from ragbudget.counters import get_counter
from ragbudget.middleware.token_budget import TokenBudgetMiddleware

from ragbudget_server import __version__
from ragbudget_server.mcp.auth import BearerTokenVerifier
from ragbudget_server.mcp.settings import ServerSettings, answer_counter, default_ceiling
from ragbudget_server.mcp.state import ServerState
from ragbudget_server.mcp.tools import STATE_KEY, register_tools
from ragbudget_server.store import DocumentStore

__all__ = ["create_server", "open_store"]

logger = logging.getLogger(__name__)

LAST_LINE_SLACK = 1.25
"""The response guard's limit over the ceiling: it never cuts an answer the tools fitted."""

INSTRUCTIONS = """\
Budgeted search over indexed files. Every `search` and `read_document` response fits its
`max_tokens` (capped by the server's ceiling). When a response is cut short it says so and
how to continue: `search` with the `cursor` it names, `read_document` with the line `offset`
it names; call again that way rather than with a larger budget. Use `read_document` with a
result's `source` to page through a whole file."""


def open_store(settings: ServerSettings) -> DocumentStore:
    """Open the store `settings` names (embedded at `db`, or on a Chroma `server`)."""
    counter = settings.counter  # None: the counter the store was built with
    if settings.server is not None:
        return DocumentStore(
            path=None,
            server=settings.server,
            collection=settings.collection,
            embedding=settings.embedding,
            counter=counter,
            connect_timeout=settings.connect_timeout,
            read_timeout=settings.read_timeout,
        )
    return DocumentStore(
        path=settings.db if settings.db is not None else ".ragbudget",
        collection=settings.collection,
        embedding=settings.embedding,
        counter=counter,
    )


def create_server(
    settings: ServerSettings | None = None,
    *,
    store: DocumentStore | None = None,
    auth_token: str | None = None,
) -> FastMCP[dict[str, Any]]:
    """Build the ragbudget MCP server.

    Args:
        settings: the store to open and the server's limits (defaults: `.ragbudget`, the
            store's own counter, a 14,500-token ceiling, ingest disabled).
        store: an already open store to serve instead of opening one from `settings`
            (tests and benchmarks share one this way); it is not closed on shutdown.
        auth_token: when set, HTTP requests must carry `Authorization: Bearer <token>`
            (stdio is not affected: it is the client's own child process).

    The store is opened once when the server starts (its lifespan) and shared by every
    session and tool call. Budgets are measured with `settings.counter` when given,
    otherwise with the store's own counter (`exact` for a new store; a store built with the
    estimate is answered with `exact`); an estimate counts with a 10% margin on top
    (`settings.server_counter`), so answers stay within budget by the real tokenizer.
    """
    settings = settings if settings is not None else ServerSettings()
    guard = _guard(settings, store)

    @asynccontextmanager
    async def lifespan(server: FastMCP[dict[str, Any]]) -> AsyncIterator[dict[str, Any]]:
        if store is not None:
            state = ServerState(settings, store=store, guard=guard)
        else:
            state = ServerState(settings, opener=partial(open_store, settings), guard=guard)
            if settings.server is None:
                await state.ready()  # an embedded store that cannot open stops the server
            else:
                state.start_opening()  # a Chroma server may be slow: initialize does not wait
        logger.info(
            "serving collection %r of %s with counter %s (ceiling %s tokens, ingest %s)",
            settings.collection,
            settings.server or settings.db or ".ragbudget",
            state.counter.name if state.is_open else settings.counter or "the collection's",
            state.ceiling if state.is_open else settings.max_tokens_ceiling or "the default",
            "under " + ", ".join(map(str, settings.allow_roots))
            if settings.ingest_enabled
            else "disabled",
        )
        try:
            yield {STATE_KEY: state}
        finally:
            state.close()  # releases a store it opened

    mcp: FastMCP[dict[str, Any]] = FastMCP(
        settings.name,
        version=__version__,
        instructions=INSTRUCTIONS,
        lifespan=lifespan,
        auth=BearerTokenVerifier(auth_token) if auth_token else None,
    )
    register_tools(mcp, settings)
    mcp.add_middleware(guard)
    return mcp


def _guard(settings: ServerSettings, store: DocumentStore | None) -> TokenBudgetMiddleware:
    """The last line of defence over every tool result.

    The budgeted tools fit their own answers (and page by themselves) and hand it the count
    they measured (`ServerState.measured`), so it counts those answers no second time; it
    measures every other result (`stats`, `ingest`, a tool added to the server). The slack
    covers counting with another counter than the store's (its own is known only once it is
    open).
    """
    if settings.counter is not None:
        counter = get_counter(settings.counter)
    else:
        counter = answer_counter(store.counter if store is not None else None)
    limit = int((settings.max_tokens_ceiling or default_ceiling(counter)) * LAST_LINE_SLACK)
    return TokenBudgetMiddleware(limit, counter=counter, continuation=False)
