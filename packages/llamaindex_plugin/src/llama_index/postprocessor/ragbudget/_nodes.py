"""Fitting LlamaIndex nodes to a token budget: what the LLM sees, counted and cut.

`ragbudget.fit` ranks and budgets the nodes' texts, each counted as the LLM sees it
(`get_content(metadata_mode)`, metadata header included), once: a node over the whole budget
has its *text* cut (at a sentence boundary, with a marker) until its rendered content, header
and all, fits; a node whose header alone does not fit is dropped. Where the ragbudget tag
shows (`MetadataMode.ALL`), each node is counted with its own tag, which states that count
(`ragbudget.stated_count`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from llama_index.core.schema import BaseNode, MetadataMode, NodeWithScore, TextNode

from ragbudget import (
    Chunk,
    TokenCounter,
    TruncationInfo,
    fit,
    rank_chunks,
    stated_count,
    with_marker,
)
from ragbudget.budget import Oversize, Strategy

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


def _with_tag(
    node: BaseNode,
    counter: TokenCounter,
    mode: MetadataMode,
    *,
    rank: int,
    cut: bool,
    extra: dict[str, list[str]] | None = None,
) -> tuple[BaseNode, int, int]:
    """`node` (a copy) tagged: the tagged node, the count its tag states and the count of its
    content as rendered. Where the tag shows (`MetadataMode.ALL`), it states its own node's
    count: `stated_count` finds the number that stays the same once written."""
    tokens = counter.count(node.get_content(metadata_mode=mode))
    if mode in _TAG_HIDDEN:
        return _tagged(node, tokens=tokens, rank=rank, cut=cut, extra=extra), tokens, tokens

    def size_at(n: int) -> int:
        tagged = _tagged(node, tokens=n, rank=rank, cut=cut, extra=extra)
        return counter.count(tagged.get_content(metadata_mode=mode))

    stated, size = stated_count(size_at, tokens)
    return _tagged(node, tokens=stated, rank=rank, cut=cut, extra=extra), stated, size


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
    tagged, _, size = _with_tag(node, counter, mode, rank=rank, cut=cut, extra=extra)
    return tagged, size


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

    One `fit` over the nodes' texts, each rendered as the LLM sees it (with its tag, where
    the tag shows): it ranks, budgets and cuts a node over the whole budget (its text, so that
    the rendered content fits), and its report is the call's. Returns tagged copies in input
    order, each rendering exactly what `fit` counted; the caller's nodes are never touched.
    """
    check_nodes(nodes)
    ids = unique_ids(nodes)
    by_id = dict(zip(ids, nodes, strict=True))
    chunks = [
        Chunk(id=cid, text=nws.node.get_content(metadata_mode=MetadataMode.NONE),
              score=node_score(nws))
        for cid, nws in zip(ids, nodes, strict=True)
    ]  # fmt: skip
    texts = {c.id: c.text for c in chunks}
    ranks = {chunks[i].id: r for r, i in enumerate(rank_chunks(chunks))}  # as `fit` ranks
    stated: dict[tuple[str, str], int] = {}  # the count a shown tag states, per rendering

    def node_of(chunk: Chunk, *, deep: bool = False) -> BaseNode:
        """The node `chunk` stands for (a copy), holding its text: cut, or whole."""
        node = by_id[chunk.id].node.model_copy(deep=deep)
        if chunk.text != texts[chunk.id]:
            node.set_content(chunk.text)
            kept = chunk.metadata.get("kept_chars")
            if isinstance(node, TextNode) and node.start_char_idx is not None and kept is not None:
                node.end_char_idx = node.start_char_idx + kept
        return node

    def render(chunk: Chunk) -> str:
        node = node_of(chunk)
        if metadata_mode in _TAG_HIDDEN:
            return node.get_content(metadata_mode=metadata_mode)
        cut = chunk.text != texts[chunk.id]
        tagged, n, _ = _with_tag(node, counter, metadata_mode, rank=ranks[chunk.id], cut=cut)
        stated[chunk.id, chunk.text] = n
        return tagged.get_content(metadata_mode=metadata_mode)

    def cut(chunk: Chunk, kept: str, marker: str) -> Chunk:
        shown = with_marker(kept, marker)
        return chunk.model_copy(
            update={"text": shown, "metadata": {"kept_chars": len(kept.rstrip())}}
        )

    result = fit(
        chunks,
        max_tokens,
        counter=counter,
        strategy=strategy,
        oversize=oversize,
        order="original",
        render=render,
        cut=cut,
    )
    cut_ids = set(result.info.cut_ids)
    out = [
        NodeWithScore(
            node=_tagged(node_of(chunk, deep=True), rank=rank, cut=chunk.id in cut_ids,
                         tokens=stated.get((chunk.id, chunk.text), tokens)),
            score=by_id[chunk.id].score,
        )
        for chunk, tokens, rank in zip(result.chunks, result.tokens, result.ranks, strict=True)
    ]  # fmt: skip
    return NodeFit(nodes=out, info=result.info)
