"""The `ragbudget_truncation` custom event: each budgeted call's TruncationInfo, sync and async."""

from __future__ import annotations

import logging

from langchain_core.callbacks import (
    AsyncCallbackManager,
    BaseCallbackManager,
    CallbackManager,
    Callbacks,
    adispatch_custom_event,
    dispatch_custom_event,
)
from ragbudget import TruncationInfo

__all__ = ["TRUNCATION_EVENT", "adispatch_truncation", "dispatch_truncation"]

logger = logging.getLogger(__name__)

TRUNCATION_EVENT = "ragbudget_truncation"
"""Name of the custom event each call emits; its data is the call's `ragbudget.TruncationInfo`."""


def _log(info: TruncationInfo) -> None:
    # fit() has already warned on the "ragbudget" logger when it truncated; this line says
    # that the event went out, for whoever follows this package's logger.
    logger.debug(
        "%s: returned %d of %d documents (%d dropped, %d cut), %d of %d tokens (%s)",
        TRUNCATION_EVENT,
        info.returned_count,
        info.original_count,
        len(info.dropped_ids),
        len(info.cut_ids),
        info.used_tokens,
        info.max_tokens,
        info.counter,
    )


def _has_parent(callbacks: Callbacks) -> bool:
    return isinstance(callbacks, BaseCallbackManager) and callbacks.parent_run_id is not None


def dispatch_truncation(info: TruncationInfo, callbacks: Callbacks) -> None:
    """Log `info` and send it to the handlers in `callbacks` (a run's child manager, a list of
    handlers, or None for no handlers)."""
    _log(info)
    if callbacks is None:
        return
    if _has_parent(callbacks):
        dispatch_custom_event(TRUNCATION_EVENT, info, config={"callbacks": callbacks})
    else:  # handlers given outside any run (e.g. compress_documents(..., callbacks=[h]))
        CallbackManager.configure(callbacks).on_custom_event(TRUNCATION_EVENT, info)


async def adispatch_truncation(info: TruncationInfo, callbacks: Callbacks) -> None:
    """The async twin of `dispatch_truncation`: awaits async handlers."""
    _log(info)
    if callbacks is None:
        return
    if _has_parent(callbacks):
        await adispatch_custom_event(TRUNCATION_EVENT, info, config={"callbacks": callbacks})
    else:
        await AsyncCallbackManager.configure(callbacks).on_custom_event(TRUNCATION_EVENT, info)
