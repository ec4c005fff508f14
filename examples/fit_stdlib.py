"""fit() on real text: the Python standard library's json and email sources as retrieved chunks,
with a budget that forces truncation and a context bomb (pydoc_data/topics.py) at the top.

Run: uv run python examples/fit_stdlib.py
"""

from __future__ import annotations

import json
import logging
import sysconfig
from pathlib import Path

from ragbudget import Chunk, fit, get_counter


def main(budget: int = 8192) -> dict[str, object]:
    std = Path(sysconfig.get_paths()["stdlib"])
    files = sorted((std / "json").glob("*.py")) + sorted((std / "email").glob("*.py"))[:15]
    chunks = [
        Chunk(
            id=str(f.relative_to(std)),
            text=f.read_text(encoding="utf-8"),
            score=round(1 - i / 40, 3),
        )
        for i, f in enumerate(files)
    ]
    bomb = std / "pydoc_data" / "topics.py"
    chunks.insert(
        0, Chunk(id=str(bomb.relative_to(std)), text=bomb.read_text(encoding="utf-8"), score=0.99)
    )
    counter = get_counter()  # the dependency-free estimator
    total = sum(counter.count(c.text) for c in chunks)
    per_chunk = 2048
    result = fit(chunks, budget, counter=counter, max_tokens_per_chunk=per_chunk)
    print(f"{len(chunks)} chunks retrieved, {total:,} tokens ({counter.name}); budget {budget:,}")
    for chunk, tokens, rank in zip(result.chunks, result.tokens, result.ranks, strict=True):
        cut = " (cut)" if chunk.id in result.info.cut_ids else ""
        print(f"  rank {rank:>2}  score {chunk.score:.3f}  {tokens:>5} tokens  {chunk.id}{cut}")
    if result.info.cut_ids:
        print(f"  (cut): the file is longer than the {per_chunk:,} tokens one chunk may take "
              "here, so fit() kept its beginning, up to the last paragraph, sentence or line "
              "break that fits, and ended it with a marker that says so")  # fmt: skip
    print("\nTruncation report:")
    print(json.dumps(result.info.model_dump(), indent=2))
    print("\nWhat the model is told:", result.info.notice())
    return result.info.model_dump()


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    main()
