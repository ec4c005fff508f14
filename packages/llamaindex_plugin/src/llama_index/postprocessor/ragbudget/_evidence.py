"""More evidence per token for LlamaIndex nodes: `ragbudget.evidence.select` over NodeWithScore.

A node's place is LlamaIndex's: its source is its SOURCE relationship (`node.ref_doc_id`, the
Document it was split from), its span `start_char_idx`/`end_char_idx` (which `SentenceSplitter`
sets). Adjacent or overlapping nodes of one Document merge into one node (the best-ranked
member's copy, its text the span's, its indices moved); near-duplicate texts leave; a cap per
Document and an MMR order (cosine on `node.embedding` where every node has one, else lexical)
apply; with snippets a node larger than its fair share keeps its lines that best match the
query. Every node's LLM-visible content (metadata header included) is counted alone and the
counts sum to at most the budget (`ragbudget.PartsCounter`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from llama_index.core.schema import BaseNode, MetadataMode, NodeWithScore, TextNode
from llama_index.postprocessor.ragbudget._nodes import (
    check_nodes,
    node_score,
    tagged_count,
    unique_ids,
)

from ragbudget import Chunk, PartsCounter, TokenCounter, TruncationInfo, rank_chunks
from ragbudget.evidence import EvidenceReport, Positions, select

__all__ = ["POSITIONS", "Evidence", "EvidenceFit", "select_nodes"]

POSITIONS = Positions(start_line=None, end_line=None)
"""The keys `select` reads: the node's Document id and `start_char_idx`/`end_char_idx` are
copied into `source`, `start_index` and `end_index`."""


@dataclass(frozen=True)
class Evidence:
    """The evidence options of one call."""

    merge: bool = False
    dedupe: bool = False
    max_per_source: int | None = None
    mmr: float | None = None
    snippets: bool = False


@dataclass(frozen=True)
class EvidenceFit:
    """The nodes returned (copies, input order), the truthful report and `select`'s own."""

    nodes: list[NodeWithScore]
    info: TruncationInfo
    report: EvidenceReport


def _place(node: BaseNode) -> dict[str, object]:
    """The metadata `POSITIONS` reads for `node` (none when LlamaIndex does not place it)."""
    source = node.ref_doc_id
    if not isinstance(node, TextNode) or source is None:
        return {}
    return {"source": source, "start_index": node.start_char_idx, "end_index": node.end_char_idx}


def _node_of(nodes: Sequence[NodeWithScore], ids: list[str]) -> Callable[[Chunk], BaseNode]:
    """The node a chunk stands for: the given one, or a copy holding the chunk's text (a
    merged span or a snippet) with its indices moved."""
    by_id = {cid: nws.node for cid, nws in zip(ids, nodes, strict=True)}

    def node_of(chunk: Chunk) -> BaseNode:
        node = by_id[chunk.id]
        if chunk.text == node.get_content(metadata_mode=MetadataMode.NONE):
            return node
        copy = node.model_copy()
        copy.set_content(chunk.text)
        if isinstance(copy, TextNode) and "start_index" in chunk.metadata:
            copy.start_char_idx = chunk.metadata["start_index"]
            copy.end_char_idx = chunk.metadata["end_index"]
        return copy

    return node_of


def _vectors(nodes: Sequence[NodeWithScore], ids: list[str]) -> dict[str, list[float]] | None:
    """`{id: node.embedding}` when every node carries its embedding, else None (lexical)."""
    vectors = [nws.node.embedding for nws in nodes]
    if not vectors or any(v is None for v in vectors):
        return None
    return {cid: v for cid, v in zip(ids, vectors, strict=True) if v is not None}


def select_nodes(
    nodes: Sequence[NodeWithScore],
    *,
    max_tokens: int,
    counter: TokenCounter,
    metadata_mode: MetadataMode,
    query: str | None,
    options: Evidence,
) -> EvidenceFit:
    """`select` over the nodes' texts, each node counted as rendered (`metadata_mode`)."""
    check_nodes(nodes)
    ids = unique_ids(nodes)
    chunks = [
        Chunk(id=cid, text=nws.node.get_content(metadata_mode=MetadataMode.NONE),
              score=node_score(nws), metadata=_place(nws.node))
        for cid, nws in zip(ids, nodes, strict=True)
    ]  # fmt: skip
    node_of = _node_of(nodes, ids)
    contents = [nws.node.get_content(metadata_mode=metadata_mode) for nws in nodes]
    parts = PartsCounter(counter, contents)

    def draw(kept: list[Chunk]) -> str:
        return parts.join(node_of(c).get_content(metadata_mode=metadata_mode) for c in kept)

    got = select(
        chunks,
        max_tokens,
        counter=parts,
        query=query,
        render=draw,
        positions=POSITIONS,
        merge=options.merge,
        dedupe_threshold=0.9 if options.dedupe else None,
        max_per_source=options.max_per_source,
        mmr=options.mmr,
        embeddings=_vectors(nodes, ids) if options.mmr is not None else None,
        snippets=options.snippets,
    )
    report = got.report
    rank = {chunks[i].id: r for r, i in enumerate(rank_chunks(chunks))}
    index = {cid: i for i, cid in enumerate(ids)}
    _, duplicates = _holders({c.id for c in got.chunks}, report)
    built: list[tuple[Chunk, NodeWithScore, int]] = []
    for chunk in got.chunks:  # select's order: the budget leaves the last ones first
        node = node_of(chunk).model_copy(deep=True)
        extra = {"merged_ids": report.merged.get(chunk.id, []),
                 "duplicate_ids": duplicates.get(chunk.id, [])}  # fmt: skip
        extra = {k: v for k, v in extra.items() if v}
        tagged, n = tagged_count(node, counter, metadata_mode, rank=rank[chunk.id],
                                 cut=chunk.id in report.cut_ids, extra=extra)  # fmt: skip
        built.append((chunk, NodeWithScore(node=tagged, score=nodes[index[chunk.id]].score), n))
    while sum(n for _, _, n in built) > max_tokens:  # a tag that shows (MetadataMode.ALL)
        built.pop()
    holder, duplicates = _holders({chunk.id for chunk, _, _ in built}, report)
    placed = set(holder) | {d for ds in duplicates.values() for d in ds}
    dropped = sorted((cid for cid in ids if cid not in placed), key=rank.__getitem__)
    cut_ids = [chunk.id for chunk, _, _ in built if chunk.id in report.cut_ids]
    info = TruncationInfo.of(
        original_count=len(ids),
        returned_count=len(built),
        dropped_ids=dropped,
        cut_ids=cut_ids,
        used_tokens=sum(n for _, _, n in built),
        max_tokens=max_tokens,
        counter=counter,
    )
    out = [nws for chunk, nws, _ in sorted(built, key=lambda b: index[b[0].id])]
    return EvidenceFit(nodes=out, info=info, report=report)


def _holders(
    shown: set[str], report: EvidenceReport
) -> tuple[dict[str, str], dict[str, list[str]]]:
    """For the `shown` ids: `{id: the shown id whose text holds it}` (itself, or the span it
    merged into), and `{shown id: the duplicates whose text it shows}`."""
    holder = {m: span for span, members in report.merged.items() if span in shown for m in members}
    holder.update({cid: cid for cid in shown})
    duplicates: dict[str, list[str]] = {}
    for gone, twin in report.deduped.items():
        if twin in holder:
            duplicates.setdefault(holder[twin], []).append(gone)
    return holder, duplicates
