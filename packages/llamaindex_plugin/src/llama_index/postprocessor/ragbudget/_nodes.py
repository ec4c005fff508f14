"""Fitting LlamaIndex nodes to a token budget: what the LLM sees, counted and cut.

`ragbudget.fit` ranks and budgets the nodes' LLM-visible content (metadata header included).
A node over the whole budget is cut here first, at the node level: its *text* is cut (at a
sentence boundary, by `fit` on the text alone) until the rendered content, header and all,
fits; a node whose header alone does not fit stays oversized and `fit` drops it.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from llama_index.core.schema import BaseNode, MetadataMode, NodeWithScore, TextNode

from ragbudget import CUT_MARKER, Chunk, TokenCounter, TruncationInfo, count_many, fit
from ragbudget.budget import Oversize, Strategy

__all__ = ["TAG_KEY", "NodeFit", "fit_nodes"]

TAG_KEY = "ragbudget"
"""The metadata key each returned node gets: `{"tokens": int, "rank": int, "cut": bool}`."""

_MARKER_HEAD = CUT_MARKER.split("{", 1)[0]

# The plugin logs one summary per call with node-level figures; the core's own log lines for
# the fits made on its behalf (the ranking fit, and one per text cut) would repeat it with
# chunk-level figures, so they are filtered out while the plugin runs. The flag is a context
# variable: other threads and tasks calling `ragbudget.fit` directly still log.
_quiet: ContextVar[bool] = ContextVar("ragbudget_llamaindex_quiet", default=False)


class _QuietWhilePlugin(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not _quiet.get()


_core_logger = logging.getLogger("ragbudget")
if not any(isinstance(f, _QuietWhilePlugin) for f in _core_logger.filters):
    _core_logger.addFilter(_QuietWhilePlugin())


@contextmanager
def _core_quiet() -> Iterator[None]:
    token = _quiet.set(True)
    try:
        yield
    finally:
        _quiet.reset(token)


@dataclass(frozen=True)
class NodeFit:
    """The nodes returned (copies, input order) and the truthful report."""

    nodes: list[NodeWithScore]
    info: TruncationInfo


def _score(nws: NodeWithScore) -> float | None:
    # NaN ranks like a missing score (LlamaIndex postprocessors let NaN through); ragbudget's
    # Chunk rejects it.
    if nws.score is None or math.isnan(nws.score):
        return None
    return float(nws.score)


def _unique_ids(nodes: Sequence[NodeWithScore]) -> list[str]:
    """Node ids, with '#2', '#3'... added to repeats (a fusion retriever can repeat a node)."""
    taken: set[str] = set()
    ids: list[str] = []
    for nws in nodes:
        base = candidate = nws.node.node_id
        k = 1
        while candidate in taken:
            k += 1
            candidate = f"{base}#{k}"
        taken.add(candidate)
        ids.append(candidate)
    return ids


def _tagged(node: BaseNode, *, tokens: int, rank: int, cut: bool) -> BaseNode:
    """`node` (already a copy) with the ragbudget tag, hidden from the LLM and the embedder."""
    node.metadata = {**node.metadata, TAG_KEY: {"tokens": tokens, "rank": rank, "cut": cut}}
    for attr in ("excluded_llm_metadata_keys", "excluded_embed_metadata_keys"):
        keys = list(getattr(node, attr))
        if TAG_KEY not in keys:
            keys.append(TAG_KEY)
        setattr(node, attr, keys)
    return node


class _MemoCounter:
    """Counts each distinct text once per call: the pre-count here and the count in `fit`."""

    def __init__(self, counter: TokenCounter) -> None:
        self.inner = counter
        self._memo: dict[str, int] = {}
        self.name = counter.name
        self.exact = counter.exact

    def count(self, text: str) -> int:
        n = self._memo.get(text)
        if n is None:
            n = self._memo[text] = self.inner.count(text)
        return n

    def count_batch(self, texts: list[str]) -> list[int]:
        missing = list(dict.fromkeys(t for t in texts if t not in self._memo))
        self._memo.update(zip(missing, count_many(self.inner, missing), strict=True))
        return [self._memo[t] for t in texts]


def _cut_node(node: BaseNode, room: int, memo: _MemoCounter, mode: MetadataMode) -> BaseNode | None:
    """A copy of `node` whose text is cut so its rendered content counts <= `room` tokens.

    None when not even the header with a cut marker fits. The text budget starts at the room
    minus the header's count and shrinks by the overshoot until the rendered content fits
    (tokens at the header/text seam do not add up exactly).
    """
    text = node.get_content(metadata_mode=MetadataMode.NONE)
    copy = node.model_copy(deep=True)
    copy.set_content("")
    budget = room - memo.count(copy.get_content(metadata_mode=mode))
    while budget > 0:
        with _core_quiet():
            # the raw counter: the prefixes bisection tries are not worth remembering
            result = fit([Chunk(id="text", text=text)], budget, counter=memo.inner)
        if not result.chunks:
            return None
        cut_text = result.chunks[0].text
        copy.set_content(cut_text)
        n = memo.count(copy.get_content(metadata_mode=mode))  # fit counts it again
        if n <= room:
            _move_end_char_idx(copy, text, cut_text)
            return copy
        budget -= max(1, n - room)
    return None


def _move_end_char_idx(node: BaseNode, text: str, cut_text: str) -> None:
    """Point `end_char_idx` at the end of the kept prefix (for citations/highlighting)."""
    if not isinstance(node, TextNode) or node.start_char_idx is None:
        return
    kept = cut_text.rfind(_MARKER_HEAD)
    if kept >= 0 and text.startswith(cut_text[:kept]):
        node.end_char_idx = node.start_char_idx + kept


def fit_nodes(
    nodes: Sequence[NodeWithScore],
    *,
    max_tokens: int,
    counter: TokenCounter,
    strategy: Strategy,
    oversize: Oversize,
    metadata_mode: MetadataMode,
) -> NodeFit:
    """Keep the highest-score nodes whose LLM-visible content fits `max_tokens`.

    Nodes over the whole budget are cut first (`oversize="truncate"`): their text, so that the
    rendered content fits; `fit` then ranks and budgets, dropping what is still oversized (a
    node whose header alone does not fit). Returns tagged copies in input order; the
    caller's nodes are never touched.
    """
    for i, nws in enumerate(nodes):
        if not isinstance(nws, NodeWithScore):
            msg = f"nodes[{i}] must be a NodeWithScore, got {type(nws).__name__}"
            raise TypeError(msg)
    memo = _MemoCounter(counter)
    ids = _unique_ids(nodes)
    contents = [nws.node.get_content(metadata_mode=metadata_mode) for nws in nodes]
    cut_nodes: dict[str, BaseNode] = {}
    if oversize == "truncate" and max_tokens > 0:
        counts = memo.count_batch(contents)
        for k, n in enumerate(counts):
            if n <= max_tokens:
                continue
            cut = _cut_node(nodes[k].node, max_tokens, memo, metadata_mode)
            if cut is not None:
                cut_nodes[ids[k]] = cut
                contents[k] = cut.get_content(metadata_mode=metadata_mode)
    chunks = [
        Chunk(id=cid, text=content, score=_score(nws))
        for cid, content, nws in zip(ids, contents, nodes, strict=True)
    ]
    with _core_quiet():
        result = fit(
            chunks,
            max_tokens,
            counter=memo,
            strategy=strategy,
            oversize="drop",  # what is still oversized cannot be cut to fit
            order="original",
        )

    index_of = {cid: k for k, cid in enumerate(ids)}
    out: list[NodeWithScore] = []
    for chunk, tokens, rank in zip(result.chunks, result.tokens, result.ranks, strict=True):
        source = nodes[index_of[chunk.id]]
        node = cut_nodes[chunk.id] if chunk.id in cut_nodes else source.node.model_copy(deep=True)
        tagged = _tagged(node, tokens=tokens, rank=rank, cut=chunk.id in cut_nodes)
        out.append(NodeWithScore(node=tagged, score=source.score))

    info = result.info
    cut_ids = [chunk.id for chunk in result.chunks if chunk.id in cut_nodes]
    if cut_ids:
        info = info.model_copy(
            update={
                "truncated": True,
                "reason": "token_budget" if info.dropped_ids else "chunk_cut",
                "cut_ids": cut_ids,
            }
        )
    return NodeFit(nodes=out, info=info)
