"""`TokenBudgetPostprocessor`: the retrieved nodes a query engine sends, within a token budget."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from typing import Any

from llama_index.core.bridge.pydantic import ConfigDict, Field, field_serializer, model_validator
from llama_index.core.instrumentation import get_dispatcher  # type: ignore[attr-defined]
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import MetadataMode, NodeWithScore, QueryBundle
from llama_index.postprocessor.ragbudget._counter import default_counter
from llama_index.postprocessor.ragbudget._evidence import Evidence, EvidenceFit, select_nodes
from llama_index.postprocessor.ragbudget._nodes import NodeFit, fit_nodes
from llama_index.postprocessor.ragbudget.events import TokenBudgetEvent

from ragbudget import CounterSpec, TokenCounter, TruncationInfo, get_counter
from ragbudget.budget import Oversize, Strategy
from ragbudget.text import counted

__all__ = ["TokenBudgetPostprocessor"]

logger = logging.getLogger(__name__)
dispatcher = get_dispatcher(__name__)


class TokenBudgetPostprocessor(BaseNodePostprocessor):
    """Keep the retrieved nodes a query engine sends to the LLM within a token budget.

    It counts what the LLM will see, `node.get_content(metadata_mode=MetadataMode.LLM)`
    (the metadata header included), keeps the highest-score nodes whose counts fit
    `max_tokens`, drops the lowest-score ones and cuts a lone oversized top node at a
    sentence boundary, with a visible marker. Nodes without a score rank after scored ones,
    in input order. It never reorders: the nodes it keeps come back in the order given.

    Setup:
        .. code-block:: bash

            pip install llama-index-postprocessor-ragbudget
            pip install 'ragbudget[tiktoken]'   # for exact OpenAI counts (optional)

    Key init args:
        max_tokens: int
            The budget for the nodes' LLM-visible content (default 8192). The prompt
            template and the query are not part of it.
        counter: str | TokenCounter | Callable[[str], int] | None
            How to count: ``"tiktoken:cl100k_base"``, ``"tiktoken:gpt-4o"``,
            ``"hf:/path/tokenizer.json"``, ``"chars:4"``, ``"estimate"``, any
            ``ragbudget.TokenCounter`` or any ``str -> int`` callable. ``None`` (default):
            the tokenizer you set with ``Settings.tokenizer = ...``, else ragbudget's
            dependency-free estimate (never LlamaIndex's implicit gpt-3.5 default).
        strategy: "stop" | "fill"
            "stop" (default) keeps the longest run of best nodes that fits; "fill" also
            keeps lower-ranked nodes that still fit after a bigger one did not.
        oversize: "truncate" | "drop"
            What to do with a node bigger than the whole budget: cut its text (default)
            or drop it.
        metadata_mode: MetadataMode
            Which rendering to count (default ``MetadataMode.LLM``, what the response
            synthesizers send). ``MetadataMode.NONE`` counts the bare text.
        merge_adjacent, dedupe, max_per_source, mmr, snippets: bool / int / float
            More evidence per token, all off by default (docs/llamaindex.md, "More evidence
            per token"): adjacent nodes of one Document (its SOURCE relationship,
            ``start_char_idx``/``end_char_idx``) merged, near-duplicates left out, a cap per
            Document, an MMR order (on ``node.embedding`` where every node has one), and, at a
            tight budget, the lines of more nodes that best match the query. They need
            ``strategy="stop"`` and ``oversize="truncate"``.

    Instantiate:
        .. code-block:: python

            from llama_index.postprocessor.ragbudget import TokenBudgetPostprocessor

            budget = TokenBudgetPostprocessor(max_tokens=4096, counter="tiktoken:gpt-4o")

    Use (drop-in, last in the list so nothing after it adds text):
        .. code-block:: python

            query_engine = index.as_query_engine(
                similarity_top_k=50, node_postprocessors=[reranker, budget]
            )
            response = query_engine.query("How do I pretty-print JSON?")
            for n in response.source_nodes:
                print(n.node.node_id, n.node.metadata["ragbudget"])
                # {'tokens': 812, 'rank': 0, 'cut': False}

    More evidence per token (nodes from SentenceSplitter or another node parser):
        .. code-block:: python

            budget = TokenBudgetPostprocessor(max_tokens=1000, merge_adjacent=True,
                                              dedupe=True, snippets=True)
            kept = budget.postprocess_nodes(nodes, query_str="how are retries configured")
            kept[0].node.metadata["ragbudget"]
            # {'tokens': ..., 'rank': 0, 'cut': True, 'merged_ids': [...]}

    Directly:
        .. code-block:: python

            kept = budget.postprocess_nodes(nodes, query_str="...")

    Async (the counting runs in a worker thread; the event goes out on the loop):
        .. code-block:: python

            kept = await budget.apostprocess_nodes(nodes, query_str="...")
            response = await query_engine.aquery("...")

    What comes back:
        Copies of the kept nodes (the caller's ``NodeWithScore`` and nodes are never
        touched), scores unchanged. Each copy's ``metadata["ragbudget"]`` holds
        ``{"tokens": <LLM-visible count>, "rank": <0-based rank among the input>,
        "cut": <bool>}``; the key is added to ``excluded_llm_metadata_keys`` and
        ``excluded_embed_metadata_keys``, so the tag never reaches the model or changes the
        count. (``MetadataMode.ALL`` renderings do show it.) A cut node keeps its id; its
        ``end_char_idx`` moves to the end of the kept text.

    Events and logs:
        Every call dispatches one :class:`TokenBudgetEvent` (``event.info`` is the
        ``ragbudget.TruncationInfo``: dropped and cut node ids, tokens used, the counter)
        through ``get_dispatcher("llama_index.postprocessor.ragbudget.base")``; handlers on
        the root dispatcher see it too. Each call logs one DEBUG line (what was kept, dropped
        and cut) on the ``llama_index.postprocessor.ragbudget.base`` logger: truncation is
        the normal outcome, not something to warn about.
    """

    model_config = ConfigDict(extra="forbid")

    max_tokens: int = Field(
        default=8192,
        ge=0,
        strict=True,
        description="Budget for the nodes' LLM-visible content, in tokens (>= 0).",
    )
    counter: Any = Field(
        default=None,
        description="Token counter spec (see ragbudget.get_counter); None: the tokenizer set "
        "with Settings.tokenizer, else 'exact' when bpe-openai is installed (ragbudget[bpe]), "
        "else ragbudget's estimate. Only string specs are serialized.",
    )
    strategy: Strategy = Field(
        default="stop",
        description="'stop': keep the longest ranked run that fits; 'fill': also keep "
        "lower-ranked nodes that still fit.",
    )
    oversize: Oversize = Field(
        default="truncate",
        description="A node over the whole budget: 'truncate' cuts its text, 'drop' drops it.",
    )
    metadata_mode: MetadataMode = Field(
        default=MetadataMode.LLM,
        description="Which rendering of each node is counted (MetadataMode.LLM: what the "
        "response synthesizers send).",
    )
    merge_adjacent: bool = Field(
        default=False,
        description="Merge adjacent or overlapping nodes of one Document (ref_doc_id, "
        "start_char_idx/end_char_idx) into one node, the overlap once; the merged ids are in "
        "metadata['ragbudget']['merged_ids'].",
    )
    dedupe: bool = Field(
        default=False,
        description="Leave out exact and near-duplicate texts; their ids are in the kept "
        "node's metadata['ragbudget']['duplicate_ids'].",
    )
    max_per_source: int | None = Field(
        default=None,
        ge=1,
        strict=True,
        description="At most this many nodes per Document (ref_doc_id); None: no cap.",
    )
    mmr: float | None = Field(
        default=None,
        ge=0.0,
        le=1.0,
        description="Maximal marginal relevance: the weight of relevance (0 to 1) against "
        "similarity to the nodes already chosen (cosine on node.embedding when every node "
        "has one, else lexical). None: rank by score alone.",
    )
    snippets: bool = Field(
        default=False,
        description="When the best nodes that fit whole are few (fewer than max_tokens // "
        "100, at most 10), that many share the budget fairly and a node larger than its "
        "share keeps its lines that best match the query (cut: true, indices moved).",
    )

    def __init__(
        self,
        max_tokens: int = 8192,
        counter: CounterSpec = None,
        strategy: Strategy = "stop",
        oversize: Oversize = "truncate",
        metadata_mode: MetadataMode = MetadataMode.LLM,
        merge_adjacent: bool = False,
        dedupe: bool = False,
        max_per_source: int | None = None,
        mmr: float | None = None,
        snippets: bool = False,
        **kwargs: Any,
    ) -> None:
        if counter is not None:
            get_counter(counter)  # fail here, not at the first query, on a bad spec
        super().__init__(
            max_tokens=max_tokens,
            counter=counter,
            strategy=strategy,
            oversize=oversize,
            metadata_mode=metadata_mode,
            merge_adjacent=merge_adjacent,
            dedupe=dedupe,
            max_per_source=max_per_source,
            mmr=mmr,
            snippets=snippets,
            **kwargs,
        )

    @model_validator(mode="after")
    def _evidence_with_stop(self) -> TokenBudgetPostprocessor:
        if self.evidence() is not None and (self.strategy != "stop" or self.oversize != "truncate"):
            msg = (
                "merge_adjacent, dedupe, max_per_source, mmr and snippets budget through "
                "ragbudget.evidence.select: they need strategy='stop' and oversize='truncate', "
                f"got strategy={self.strategy!r}, oversize={self.oversize!r}"
            )
            raise ValueError(msg)
        return self

    def evidence(self) -> Evidence | None:
        """The evidence options set, or None when all are off (the plain budget)."""
        options = Evidence(
            merge=self.merge_adjacent,
            dedupe=self.dedupe,
            max_per_source=self.max_per_source,
            mmr=self.mmr,
            snippets=self.snippets,
        )
        return None if options == Evidence() else options

    @field_serializer("counter")
    def _serialize_counter(self, counter: Any) -> str | None:
        # A counter object or callable is not serialized, as LlamaIndex does with a splitter's
        # tokenizer: pass it again when loading.
        return counter if isinstance(counter, str) else None

    @classmethod
    def class_name(cls) -> str:
        return "TokenBudgetPostprocessor"

    def token_counter(self) -> TokenCounter:
        """The counter the next call will use (resolved per call, so a later
        `Settings.tokenizer = ...` takes effect for `counter=None`)."""
        if self.counter is None:
            return default_counter()
        return get_counter(self.counter)

    def _fit(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None
    ) -> NodeFit | EvidenceFit:
        options = self.evidence()
        result: NodeFit | EvidenceFit
        if options is None:
            result = fit_nodes(
                nodes,
                max_tokens=self.max_tokens,
                counter=self.token_counter(),
                strategy=self.strategy,
                oversize=self.oversize,
                metadata_mode=self.metadata_mode,
            )
        else:
            result = select_nodes(
                nodes,
                max_tokens=self.max_tokens,
                counter=self.token_counter(),
                metadata_mode=self.metadata_mode,
                query=query_bundle.query_str if query_bundle is not None else None,
                options=options,
            )
        # A postprocessor's caller cannot ask for the next page: the report names no
        # continuation, so its notice says what was left out and nothing about an offset.
        result = dataclasses.replace(
            result, info=result.info.model_copy(update={"next_offset": None})
        )
        _log(result.info)
        if nodes and not result.nodes and self.max_tokens > 0:
            # No node fits: an empty list, as LlamaIndex's postprocessors return when nothing
            # passes; the event's report says so (truncated, reason 'token_budget').
            logger.warning(
                "max_tokens=%d holds none of the nodes given (%s; oversize=%r): the result is "
                "empty; raise max_tokens (oversize='truncate' cuts a node to fit)",
                self.max_tokens, counted(len(nodes), "node"), self.oversize,
            )  # fmt: skip
        return result

    def _postprocess_nodes(
        self,
        nodes: list[NodeWithScore],
        query_bundle: QueryBundle | None = None,
    ) -> list[NodeWithScore]:
        result = self._fit(nodes, query_bundle)
        dispatcher.event(_event(result, query_bundle))
        return result.nodes

    @dispatcher.span
    async def _apostprocess_nodes(
        self,
        nodes: list[NodeWithScore],
        query_bundle: QueryBundle | None = None,
    ) -> list[NodeWithScore]:
        # Tokenizing and cutting are CPU work (a 100K-token node takes a while to cut):
        # a worker thread keeps the loop free; the event goes to async handlers on the loop.
        result = await asyncio.to_thread(self._fit, nodes, query_bundle)
        await dispatcher.aevent(_event(result, query_bundle))
        return result.nodes


def _event(result: NodeFit | EvidenceFit, query_bundle: QueryBundle | None) -> TokenBudgetEvent:
    return TokenBudgetEvent(
        info=result.info,
        nodes=result.nodes,
        evidence=result.report if isinstance(result, EvidenceFit) else None,
        query_str=query_bundle.query_str if query_bundle is not None else None,
    )


def _log(info: TruncationInfo) -> None:
    """Truncation is the normal outcome: one DEBUG line per call (node-level figures)."""
    if logger.isEnabledFor(logging.DEBUG):
        logger.debug("ragbudget nodes: %s", info.summary())
