"""Chunking with the default counter keeps chunks within their limit by the real tokenizers,
on every family of the shipped sample (issue 15).

The sample (`data/estimator_sample.json.gz`, held out by origin from the estimator's fit) holds
the natural families and those nothing was fitted on. Each family's texts, joined, are chunked
by `chunk_text` with the default estimate; every chunk must then count at most its limit by
cl100k_base and by o200k_base, within the estimate's tolerance: no chunk more than 1 / (1 -
25%) of the limit, and at most 1% of a family's chunks (at least one allowed) more than 1 / (1 -
10%) of it.
"""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path

import pytest
from ragbudget import chunk_text, get_counter
from ragbudget.estimate._model import TARGETS

SAMPLE = Path(__file__).parent / "data" / "estimator_sample.json.gz"
LIMIT = 256
WORST = 0.25
P99 = 0.10


def _families() -> dict[str, str]:
    texts: dict[str, list[str]] = {}
    for row in json.loads(gzip.decompress(SAMPLE.read_bytes())):
        texts.setdefault(row["family"], []).append(row["text"])
    return {family: "\n\n".join(parts) for family, parts in texts.items()}


FAMILIES = _families()


def test_sample_has_natural_and_unfitted_families() -> None:
    assert {"code", "prose", "cjk", "json", "sequences", "base64", "rare_scripts"} <= set(FAMILIES)
    assert len(FAMILIES) >= 25


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_default_chunks_stay_within_their_limit_by_real_tokenizers(family: str) -> None:
    chunks = chunk_text(FAMILIES[family], max_tokens=LIMIT)
    assert len(chunks) > 3
    assert all(chunk.tokens <= LIMIT for chunk in chunks)
    for encoding in TARGETS:
        count = get_counter(f"tiktoken:{encoding}").count
        real = [count(chunk.text) for chunk in chunks]
        assert max(real) <= LIMIT / (1 - WORST), (encoding, max(real))
        over = sum(n > LIMIT / (1 - P99) for n in real)
        assert over <= max(1, math.floor(0.01 * len(real))), (encoding, over, len(real))
