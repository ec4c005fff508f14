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
    """Truncation is the normal outcome: one DEBUG line per call, document-level figures."""
    if logger.isEnabledFor(logging.DEBUG):
        logger.debug("%s: %s", TRUNCATION_EVENT, info.summary())


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
