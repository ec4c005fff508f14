"""What the cursor-walk tests share: a corpus of random words, a coarse HNSW collection (where
Chroma's approximate top-n lists differ most as n grows), a walk by cursor, and the ids a
filter matches."""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path
from typing import Any

from ragbudget_server.store import DocumentStore, SearchResponse
from ragbudget_server.store.embedding import make_embedding

WORDS = [f"w{i}" for i in range(600)]

COARSE = {"hnsw": {"space": "cosine", "ef_construction": 8, "max_neighbors": 4, "ef_search": 8}}
"""A coarse, cheap HNSW index: few neighbours, so HNSW leaves chunks out of long top-n lists."""


def coarse_collection(client: Any, name: str) -> None:
    """The collection `name` made beforehand on `client` with the coarse index (an ingest
    adopts it)."""
    client.get_or_create_collection(
        name, embedding_function=make_embedding("hashing"), configuration=COARSE
    )


def write_corpus(root: Path, files: int, lines: int, seed: int = 1) -> None:
    """`files` files of `lines` lines of three random words, in five folders, half .md."""
    rng = random.Random(seed)
    for f in range(files):
        folder = root / f"d{f % 5}"
        folder.mkdir(parents=True, exist_ok=True)
        text = "\n".join(" ".join(rng.choice(WORDS) for _ in range(3)) for _ in range(lines))
        (folder / (f"f{f}.txt" if f % 2 else f"f{f}.md")).write_text(text + "\n")


def walk(
    store: DocumentStore, query: str, **args: Any
) -> tuple[list[SearchResponse], Counter[str]]:
    """Every page of `query` by cursor, and how often each id was accounted for."""
    pages: list[SearchResponse] = []
    seen: Counter[str] = Counter()
    cursor: str | None = None
    while True:
        page = store.search(query, cursor=cursor, **args)
        pages.append(page)
        seen.update(page.accounted_ids())
        assert len(pages) < 2000, "the walk must end"
        if page.next_cursor is None:
            assert page.next_offset is None
            return pages, seen
        assert page.next_cursor.endswith(f".{page.next_offset}")
        cursor = page.next_cursor


def matching(store: DocumentStore, where: dict[str, Any] | None = None) -> set[str]:
    """The ids of the chunks `where` matches (None: every chunk)."""
    return set(store.collection.get(where=where, include=[])["ids"])
