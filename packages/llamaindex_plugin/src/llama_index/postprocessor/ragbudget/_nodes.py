"""Fitting LlamaIndex nodes to a token budget: what the LLM sees, counted and cut.

`ragbudget.fit` ranks and budgets the nodes' LLM-visible content (metadata header included).
A node over the whole budget is cut here first, at the node level: its *text* is cut (at a
sentence boundary, by `fit` on the text alone) until the rendered content, header and all,
fits; a node whose header alone does not fit stays oversized and `fit` drops it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from llama_index.core.schema import BaseNode, MetadataMode, NodeWithScore, TextNode

from ragbudget import CUT_MARKER, Chunk, TokenCounter, TruncationInfo, count_many, fit
from ragbudget._cut import with_marker
from ragbudget.budget import Oversize, Strategy
from ragbudget.fitting import cut_text

__all__ = [
    "TAG_KEY",
    "NodeFit",
    "check_nodes",
    "fit_nodes",
    "node_score",
    "tagged_count",
    "unique_ids",
]

TAG_KEY = "ragbudget"
"""The metadata key each returned node gets: `{"tokens": int, "rank": int, "cut": bool}`."""

_TAG_HIDDEN = (MetadataMode.LLM, MetadataMode.EMBED, MetadataMode.NONE)
"""Renderings the tag does not show in (it is excluded from LLM and embed metadata)."""


@dataclass(frozen=True)
class NodeFit:
    """The nodes returned (copies, input order) and the truthful report."""

    nodes: list[NodeWithScore]
    info: TruncationInfo


def node_score(nws: NodeWithScore) -> float | None:
    # NaN ranks like a missing score (LlamaIndex postprocessors let NaN through); ragbudget's
    # Chunk rejects it.
    if nws.score is None or math.isnan(nws.score):
        return None
    return float(nws.score)


def unique_ids(nodes: Sequence[NodeWithScore]) -> list[str]:
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


def _tagged(
    node: BaseNode, *, tokens: int, rank: int, cut: bool, extra: dict[str, list[str]] | None = None
) -> BaseNode:
    """`node` (already a copy) with the ragbudget tag, hidden from the LLM and the embedder;
    `extra` adds the ids folded into it (merged_ids, duplicate_ids)."""
    tag = {"tokens": tokens, "rank": rank, "cut": cut, **(extra or {})}
    node.metadata = {**node.metadata, TAG_KEY: tag}
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
    """A copy of `node` whose text is cut (at the best boundary, with a marker) so that its
    rendered content, header included, counts <= `room` tokens; `end_char_idx` moves to the
    end of the kept text. None when not even the header with the marker fits."""
    text = node.get_content(metadata_mode=MetadataMode.NONE)
    marker = CUT_MARKER.format(limit=room, total=memo.count(node.get_content(metadata_mode=mode)))
    copy = node.model_copy(deep=True)

    def render(kept: str) -> str:
        copy.set_content(with_marker(kept, marker))
        return copy.get_content(metadata_mode=mode)

    # the raw counter: the prefixes the search tries are not worth remembering
    fitted = cut_text(text, room, memo.inner, render=render)
    if fitted is None or fitted.size == 0:
        return None
    kept = text[: fitted.size]
    copy.set_content(with_marker(kept, marker))
    if isinstance(copy, TextNode) and copy.start_char_idx is not None:
        copy.end_char_idx = copy.start_char_idx + len(kept.rstrip())
    return copy


def _final(
    node: BaseNode,
    memo: _MemoCounter,
    mode: MetadataMode,
    *,
    tokens: int,
    rank: int,
    cut: bool,
    extra: dict[str, list[str]] | None = None,
) -> tuple[BaseNode, int]:
    """`node` tagged, and the count of its content as rendered with the tag. Where the tag
    shows (`MetadataMode.ALL`), it holds its own node's count: a few rounds find the count
    that stays the same once written."""
    tagged = _tagged(node, tokens=tokens, rank=rank, cut=cut, extra=extra)
    if mode in _TAG_HIDDEN:
        return tagged, tokens
    for _ in range(4):
        n = memo.count(tagged.get_content(metadata_mode=mode))
        if n == tokens:
            break
        tokens = n
        tagged = _tagged(node, tokens=tokens, rank=rank, cut=cut, extra=extra)
    return tagged, memo.count(tagged.get_content(metadata_mode=mode))


def tagged_count(
    node: BaseNode,
    counter: TokenCounter,
    mode: MetadataMode,
    *,
    rank: int,
    cut: bool,
    extra: dict[str, list[str]],
) -> tuple[BaseNode, int]:
    """`node` (a copy) tagged, and the count of its content as rendered (tag included where
    it shows)."""
    memo = _MemoCounter(counter)
    tokens = memo.count(node.get_content(metadata_mode=mode))
    return _final(node, memo, mode, tokens=tokens, rank=rank, cut=cut, extra=extra)


def check_nodes(nodes: Sequence[NodeWithScore]) -> None:
    """A clear error for anything in `nodes` that is not a NodeWithScore."""
    for i, nws in enumerate(nodes):
        if not isinstance(nws, NodeWithScore):
            msg = f"nodes[{i}] must be a NodeWithScore, got {type(nws).__name__}"
            raise TypeError(msg)


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
    check_nodes(nodes)
    memo = _MemoCounter(counter)
    ids = unique_ids(nodes)
    sources = [nws.node for nws in nodes]
    if metadata_mode not in _TAG_HIDDEN:  # the tag shows: count each node with the widest tag
        sources = [
            _tagged(n.model_copy(deep=True), tokens=max_tokens, rank=len(nodes), cut=False)
            for n in sources
        ]
    contents = [node.get_content(metadata_mode=metadata_mode) for node in sources]
    cut_nodes: dict[str, BaseNode] = {}
    if oversize == "truncate" and max_tokens > 0:
        for k, n in enumerate(memo.count_batch(contents)):
            if n <= max_tokens:
                continue
            cut = _cut_node(sources[k], max_tokens, memo, metadata_mode)
            if cut is not None:
                cut_nodes[ids[k]] = cut
                contents[k] = cut.get_content(metadata_mode=metadata_mode)
    chunks = [
        Chunk(id=cid, text=content, score=node_score(nws))
        for cid, content, nws in zip(ids, contents, nodes, strict=True)
    ]
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
    counts: list[int] = []
    for chunk, tokens, rank in zip(result.chunks, result.tokens, result.ranks, strict=True):
        source = nodes[index_of[chunk.id]]
        node = cut_nodes[chunk.id] if chunk.id in cut_nodes else source.node.model_copy(deep=True)
        tagged, n = _final(
            node, memo, metadata_mode, tokens=tokens, rank=rank, cut=chunk.id in cut_nodes
        )
        out.append(NodeWithScore(node=tagged, score=source.score))
        counts.append(n)

    info = result.info
    # Measured as returned (tag included where it shows): the lowest-ranked leave while the
    # sum is over, which the widest tag counted up front makes all but impossible.
    ranks = list(result.ranks)
    while sum(counts) > max_tokens:
        worst = max(range(len(ranks)), key=ranks.__getitem__)
        info = info.model_copy(update={"dropped_ids": [*info.dropped_ids, result.chunks[worst].id]})
        for seq in (out, counts, ranks):
            del seq[worst]
        result = result.model_copy(
            update={"chunks": [c for i, c in enumerate(result.chunks) if i != worst]}
        )
    kept_ids = [chunk.id for chunk in result.chunks]
    cut_ids = [cid for cid in kept_ids if cid in cut_nodes]
    info = info.model_copy(
        update={
            "truncated": bool(info.dropped_ids or cut_ids),
            "reason": "token_budget" if info.dropped_ids else ("chunk_cut" if cut_ids else None),
            "cut_ids": cut_ids,
            "returned_count": len(out),
            "used_tokens": sum(counts),
        }
    )
    return NodeFit(nodes=out, info=info)
