"""`create_server`: the FastMCP server over one shared `DocumentStore`, opened in the lifespan."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio.to_thread
from fastmcp import FastMCP

from ragbudget import __version__
from ragbudget.counters import get_counter
from ragbudget.mcp.auth import BearerTokenVerifier
from ragbudget.mcp.settings import ServerSettings
from ragbudget.mcp.tools import STATE_KEY, ServerState, register_tools
from ragbudget.store import DocumentStore

__all__ = ["create_server", "open_store"]

logger = logging.getLogger(__name__)

INSTRUCTIONS = """\
Budgeted search over indexed files. Every `search` and `read_document` response fits its
`max_tokens` (capped by the server's ceiling). When a response is truncated it says so and
gives the `offset` to continue from: call again with that offset rather than a larger budget.
Use `read_document` with a result's `source` to page through a whole file."""


def open_store(settings: ServerSettings) -> DocumentStore:
    """Open the store `settings` names (embedded at `db`, or on a Chroma `server`)."""
    counter = get_counter(settings.counter)
    if settings.server is not None:
        return DocumentStore(
            path=None,
            server=settings.server,
            collection=settings.collection,
            embedding=settings.embedding,
            counter=counter,
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
            estimate counter, a 25,000-token ceiling, ingest disabled).
        store: an already open store to serve instead of opening one from `settings`
            (tests and benchmarks share one this way); it is not closed on shutdown.
        auth_token: when set, HTTP requests must carry `Authorization: Bearer <token>`
            (stdio is not affected: it is the client's own child process).

    The store is opened once when the server starts (its lifespan) and shared by every
    session and tool call. Budgets are measured with `settings.counter` when given,
    otherwise with the store's own counter.
    """
    settings = settings if settings is not None else ServerSettings()

    @asynccontextmanager
    async def lifespan(server: FastMCP[dict[str, Any]]) -> AsyncIterator[dict[str, Any]]:
        opened = (
            store if store is not None else await anyio.to_thread.run_sync(open_store, settings)
        )
        counter = get_counter(settings.counter) if settings.counter is not None else opened.counter
        logger.info(
            "serving collection %r with counter %s (ceiling %d tokens, ingest %s)",
            settings.collection,
            counter.name,
            settings.max_tokens_ceiling,
            "under " + ", ".join(map(str, settings.allow_roots))
            if settings.ingest_enabled
            else "disabled",
        )
        try:
            yield {STATE_KEY: ServerState(store=opened, counter=counter, settings=settings)}
        finally:
            if store is None:  # ours: release the Chroma client
                opened.close()

    mcp: FastMCP[dict[str, Any]] = FastMCP(
        settings.name,
        version=__version__,
        instructions=INSTRUCTIONS,
        lifespan=lifespan,
        auth=BearerTokenVerifier(auth_token) if auth_token else None,
    )
    register_tools(mcp, settings)
    return mcp
