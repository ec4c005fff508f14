"""What every tool call shares: the store, opened once (in the background for a Chroma server)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future

import anyio
import anyio.to_thread
from fastmcp.tools import ToolResult
from ragbudget.counters import TokenCounter, get_counter
from ragbudget.limits import ClientProfile, profile_for
from ragbudget.middleware.token_budget import TokenBudgetMiddleware

from ragbudget_server.mcp.client import offline_counter
from ragbudget_server.mcp.settings import (
    ServerSettings,
    answer_counter,
    default_ceiling,
    server_counter,
)
from ragbudget_server.store import DocumentStore

__all__ = ["ServerState"]

logger = logging.getLogger(__name__)


class ServerState:
    """The store every tool uses, its counter, the settings, the ingest lock and the guard.

    The store is opened by `opener` in a thread of its own: `start_opening()` starts it
    without waiting (the server answers `initialize` meanwhile, however slow the Chroma server
    is), and each tool call awaits `ready()`. When opening fails, that call reports the error
    and the next call tries again, so a Chroma server that comes up later is picked up.

    `guard` is the server's own `TokenBudgetMiddleware`: `measured` hands it the count a tool
    measured of its result, so that the result is not counted again.
    """

    def __init__(
        self,
        settings: ServerSettings,
        *,
        store: DocumentStore | None = None,
        opener: Callable[[], DocumentStore] | None = None,
        guard: TokenBudgetMiddleware | None = None,
    ) -> None:
        if store is None and opener is None:
            msg = "give the store or an opener"
            raise ValueError(msg)
        self.settings = settings
        self.ingest_lock = anyio.Lock()
        self._store = store
        self._opener = opener
        self._guard = guard
        self._counter = get_counter(settings.counter) if settings.counter is not None else None
        self._by_format: dict[str, TokenCounter] = {}
        self._pending: Future[DocumentStore] | None = None
        self._open_lock = anyio.Lock()

    @property
    def store(self) -> DocumentStore:
        """The open store (after `ready()`)."""
        if self._store is None:
            msg = "the store is not open yet: await ready() first"
            raise RuntimeError(msg)
        return self._store

    @property
    def base_counter(self) -> TokenCounter:
        """The counter the settings name, else the store's own (after `ready()`); a store
        built with the estimate (the default before `exact`) is answered with `exact` when
        bpe-openai is installed: its stored counts still size chunks, the answers are exact."""
        return self._counter if self._counter is not None else answer_counter(self.store.counter)

    @property
    def counter(self) -> TokenCounter:
        """What text answers are budgeted with: the base counter, with the estimate's margin
        when it is not exact (`settings.server_counter`)."""
        return self.counter_for("text")

    def counter_for(self, format: str) -> TokenCounter:
        """What answers in `format` are budgeted with (an estimate's margin differs by format)."""
        if format not in self._by_format:
            self._by_format[format] = server_counter(self.base_counter, format)
        return self._by_format[format]

    def profile(self, client_name: str | None) -> ClientProfile:
        """The profile a caller gets: the settings' `client`, else its own by name."""
        return profile_for(client_name, self.settings.client)

    def counter_for_profile(self, format: str, profile: ClientProfile) -> TokenCounter:
        """What an answer to a client of `profile` is counted with: the settings' counter when
        given; else the tokenizer the profile's walls are in, where it counts offline (exact,
        so no margin); else the store's (with the estimate's margin)."""
        if self.settings.counter is None and profile.tokenizer is not None:
            exact = offline_counter(profile.tokenizer)
            if exact is not None:
                return exact
        return self.counter_for(format)

    def measured(self, result: ToolResult, tokens: int, counter: TokenCounter) -> ToolResult:
        """`result`, whose content blocks count `tokens` by `counter` (added up one by one),
        vouched for with the server's guard, which then passes it without counting it again."""
        if self._guard is not None:
            self._guard.vouch(result, tokens=tokens, counter=counter.name)
        return result

    @property
    def ceiling(self) -> int:
        """The cap on any call's max_tokens: the settings', else the counter's default."""
        return self.settings.max_tokens_ceiling or default_ceiling(self.base_counter)

    @property
    def is_open(self) -> bool:
        return self._store is not None

    def start_opening(self) -> Future[DocumentStore]:
        """Start opening the store in a daemon thread (once at a time); a failure is logged."""
        if self._pending is not None:
            return self._pending
        opener = self._opener
        assert opener is not None
        future: Future[DocumentStore] = Future()

        def run() -> None:
            try:
                future.set_result(opener())
            except Exception as exc:
                logger.warning("cannot open the store: %s (tools report this and retry)", exc)
                future.set_exception(exc)

        self._pending = future
        threading.Thread(target=run, name="ragbudget-open-store", daemon=True).start()
        return future

    async def ready(self) -> DocumentStore:
        """The store, opened (or waited for) now; raises what opening it raised."""
        if self._store is not None:
            return self._store
        async with self._open_lock:
            if self._store is None:
                pending = self.start_opening()
                try:
                    self._store = await anyio.to_thread.run_sync(
                        pending.result, abandon_on_cancel=True
                    )
                except Exception:
                    self._pending = None  # failed: the next call tries again
                    raise
        return self._store

    def close(self) -> None:
        """Release a store this state opened (one given to it is the caller's to close)."""
        if self._opener is None:
            return
        store, pending = self._store, self._pending
        if store is None and pending is not None and pending.done() and not pending.exception():
            store = pending.result()  # opened in the background, never used
        if store is not None:
            store.close()
