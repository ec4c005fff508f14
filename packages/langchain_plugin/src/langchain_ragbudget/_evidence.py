"""The evidence options on LangChain Documents: a cap per source, an MMR order, and snippets.

Without snippets, the cap and the MMR order choose and order the candidates `fit` budgets
(its strategy, oversize cut and marker unchanged). With snippets, `ragbudget.evidence.select`
budgets them: when the best documents that fit whole are few, each of more documents gets a
fair share of the budget and a document larger than its share keeps its lines that best match
the query. Either way every document's rendering plus separator is counted alone and the
counts sum to at most the budget (`ragbudget.PartsCounter`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from copy import deepcopy
from typing import Any

from langchain_core.documents import Document
from ragbudget import Chunk, PartsCounter, TokenCounter, TruncationInfo, rank_chunks
from ragbudget.evidence import Positions, diversify, select

__all__ = ["POSITIONS", "annotated_copy", "diversified", "position", "select_documents"]

POSITIONS = Positions(end=None, start_line=None, end_line=None)
"""LangChain's convention: 'source' and 'start_index' (the end is the start plus the text)."""


def position(doc: Document) -> dict[str, Any]:
    """The metadata `POSITIONS` reads, from `doc`."""
    return {k: doc.metadata[k] for k in ("source", "start_index") if k in doc.metadata}


def _vectors(
    embeddings: Any, chunks: list[Chunk], mmr: float | None
) -> dict[str, Sequence[float]] | None:
    """`{id: vector}` of the chunks' texts when MMR is on and the caller gave embeddings."""
    if mmr is None or embeddings is None or len(chunks) < 3:
        return None
    vectors = embeddings.embed_documents([c.text for c in chunks])
    return dict(zip([c.id for c in chunks], vectors, strict=True))


def _positioned(chunks: list[Chunk], docs: list[Document], ids: list[str]) -> list[Chunk]:
    """`chunks` (renderings) holding their Documents' contents and positions instead."""
    index = {cid: i for i, cid in enumerate(ids)}
    return [
        c.model_copy(update={"text": docs[index[c.id]].page_content,
                             "metadata": position(docs[index[c.id]])})
        for c in chunks
    ]  # fmt: skip


def diversified(
    options: Any, chunks: list[Chunk], docs: list[Document], ids: list[str]
) -> tuple[list[Chunk], list[str]]:
    """`chunks` ranked, capped per source and in MMR order (`options`' max_per_source, mmr,
    embeddings), re-scored so that `fit` keeps that order (the caller keeps the original
    scores); and the ids the cap left out."""
    positioned = _positioned(chunks, docs, ids)
    ranked = [positioned[i] for i in rank_chunks(positioned)]
    out, capped = diversify(
        ranked,
        max_per_source=options.max_per_source,
        mmr=options.mmr,
        embeddings=_vectors(options.embeddings, ranked, options.mmr),
        positions=POSITIONS,
    )
    text = {c.id: c.text for c in chunks}
    n = len(out)
    return [
        c.model_copy(update={"text": text[c.id], "metadata": {}, "score": float(n - i)})
        for i, c in enumerate(out)
    ], capped


def _document_of(docs: list[Document], ids: list[str]) -> Callable[[Chunk], Document]:
    """The Document a chunk stands for: the given one, or, for a part of it, a copy holding
    that part at its start_index."""
    by_id = dict(zip(ids, docs, strict=True))

    def doc_of(chunk: Chunk) -> Document:
        doc = by_id[chunk.id]
        if chunk.text == doc.page_content:
            return doc
        metadata = deepcopy(doc.metadata)
        if "start_index" in chunk.metadata:
            metadata["start_index"] = chunk.metadata["start_index"]
        return doc.model_copy(update={"page_content": chunk.text, "metadata": metadata})

    return doc_of


def annotated_copy(doc: Document, content: str, note: dict[str, Any]) -> Document:
    """A copy of `doc` holding `content`, with `metadata["ragbudget"] = note`."""
    metadata = deepcopy(doc.metadata)
    metadata["ragbudget"] = note
    return doc.model_copy(update={"page_content": content, "metadata": metadata})


def select_documents(
    options: Any,
    chunks: list[Chunk],
    docs: list[Document],
    ids: list[str],
    folded: dict[str, dict[str, list[str]]],
    query: str | None,
    counter: TokenCounter,
) -> tuple[list[Document], TruncationInfo]:
    """`select` (snippets, and `options`' cap and MMR order) over the documents' contents,
    each counted as rendered by `options` plus its separator. Returns annotated copies, in
    order, and the report (capped ids count as dropped)."""
    separator: str = options.document_separator
    render: Callable[[Document], str] = options._render
    doc_of = _document_of(docs, ids)
    positioned = _positioned(chunks, docs, ids)
    parts = PartsCounter(counter, [*(render(d) + separator for d in docs), separator])

    def draw(kept: list[Chunk]) -> str:
        return parts.join(render(doc_of(c)) + separator for c in kept)

    ranked = [positioned[i] for i in rank_chunks(positioned)]
    got = select(
        positioned,
        options.max_tokens,
        counter=parts,
        query=query,
        render=draw,
        positions=POSITIONS,
        merge=False,  # the caller folded (merged, deduped) already
        dedupe_threshold=None,
        max_per_source=options.max_per_source,
        mmr=options.mmr,
        embeddings=_vectors(options.embeddings, ranked, options.mmr),
        snippets=True,
    )
    report = got.report
    rank = {c.id: r for r, c in enumerate(ranked)}
    kept = []
    for chunk in got.chunks:
        doc = doc_of(chunk)
        note = {"tokens": parts.part(render(doc) + separator), "rank": rank[chunk.id],
                "score": chunk.score, "cut": chunk.id in report.cut_ids,
                **folded.get(chunk.id, {})}  # fmt: skip
        kept.append(annotated_copy(doc, doc.page_content, note))
    left_out = {*report.dropped_ids, *report.capped_ids}
    dropped = [c.id for c in ranked if c.id in left_out]
    info = TruncationInfo.of(
        original_count=len(chunks),
        returned_count=len(kept),
        dropped_ids=dropped,
        cut_ids=report.cut_ids,
        used_tokens=report.used_tokens,
        max_tokens=options.max_tokens,
        counter=counter,
    )
    return kept, info
