"""Keep a store in sync with folders: ingest again whenever files under them change.

Needs the `watchfiles` package (not a dependency of ragbudget yet: `pip install watchfiles`).
Each batch of changes (debounced by watchfiles) runs one ordinary ingest of the watched paths:
unchanged files are recognised by their hash and cost a read, changed files are rewritten,
and with `prune` the chunks of deleted files go. So a watch has the crash guarantees of an
ingest: killed during a sync, the next ingest (or watch) ends exactly as a clean one.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ragbudget_server.store.errors import StoreError
from ragbudget_server.store.models import IngestReport

__all__ = ["watch"]

logger = logging.getLogger(__name__)


def watch(
    store: Any,
    paths: Sequence[str | os.PathLike[str]],
    *,
    on_sync: Callable[[IngestReport], None],
    on_ready: Callable[[], None] | None = None,
    on_start: Callable[[int], None] | None = None,
    stop_event: threading.Event | None = None,
    debounce_ms: int = 1600,
    **ingest_options: Any,
) -> None:
    """Ingest `paths` into `store` after every batch of file changes, until `stop_event` is set
    (or Ctrl-C). `on_ready()` is called once the watcher runs (changes from then on are seen),
    `on_start(n)` when a sync of `n` changes begins;
    `ingest_options` go to `DocumentStore.ingest` (prune, chunk_tokens, ...)."""
    try:
        import watchfiles
    except ImportError:
        msg = "watching needs the watchfiles package: pip install watchfiles"
        raise StoreError(msg) from None
    roots = [Path(os.fspath(p)).expanduser().resolve() for p in paths]
    backend_path = getattr(store._backend, "path", None)
    own = backend_path.resolve() if backend_path is not None else None
    default = watchfiles.DefaultFilter()

    def wanted(change: Any, path: str) -> bool:
        if own is not None and Path(path).is_relative_to(own):
            return False  # the store's own files: writing them must not trigger a sync
        return bool(default(change, path))

    for changes in watchfiles.watch(
        *roots,
        watch_filter=wanted,
        debounce=debounce_ms,
        stop_event=stop_event,
        raise_interrupt=False,
        yield_on_timeout=True,  # an empty batch first: the watcher is running
        rust_timeout=1000,
    ):
        if on_ready is not None:
            ready, on_ready = on_ready, None
            ready()
        if not changes:
            continue
        logger.debug("%d file changes under %s: syncing", len(changes), roots)
        if on_start is not None:
            on_start(len(changes))
        try:
            report = store.ingest(roots, **ingest_options)
        except StoreError as exc:  # e.g. a watched folder was removed: say so, keep watching
            logger.warning("sync failed: %s", exc)
            continue
        on_sync(report)
