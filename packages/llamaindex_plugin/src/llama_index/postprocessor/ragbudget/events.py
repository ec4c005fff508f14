"""The instrumentation event a `TokenBudgetPostprocessor` emits on every call."""

from __future__ import annotations

from llama_index.core.instrumentation.events import BaseEvent
from llama_index.core.schema import NodeWithScore
from pydantic import Field

from ragbudget import TruncationInfo
from ragbudget.evidence import EvidenceReport

__all__ = ["TokenBudgetEvent"]


class TokenBudgetEvent(BaseEvent):
    """What one `TokenBudgetPostprocessor` call kept, dropped and cut.

    Dispatched through `get_dispatcher("llama_index.postprocessor.ragbudget.base")`, which
    propagates to the root dispatcher, so a handler added with
    `llama_index.core.instrumentation.get_dispatcher().add_event_handler(handler)` sees it.
    """

    info: TruncationInfo = Field(
        description="The budget report: dropped_ids and cut_ids are node ids, used_tokens "
        "counts the returned nodes' LLM-visible content."
    )
    nodes: list[NodeWithScore] = Field(description="The nodes returned (tagged copies).")
    query_str: str | None = Field(default=None, description="The query, when one was given.")
    evidence: EvidenceReport | None = Field(
        default=None,
        description="With the evidence options (merge_adjacent, dedupe, max_per_source, mmr, "
        "snippets): what ragbudget.evidence.select did with every node id (kept, merged, "
        "deduped, capped, dropped, cut). None for the plain budget.",
    )

    @classmethod
    def class_name(cls) -> str:
        return "TokenBudgetEvent"
