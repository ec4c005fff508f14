"""Quick figure for `make bench`: the default estimate against tiktoken on the test sample.

The full per-family table (18,000 held-out chunks, both encodings, len // 4 and UTF-8 bytes
beside it) is `make bench-estimator`; this prints the short version from the fixed sample that
ships with the tests (tests/core/data/estimator_sample.json.gz), in a few seconds.
"""

from __future__ import annotations

import gzip
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "tests" / "core" / "data" / "estimator_sample.json.gz"


def _offline_tiktoken() -> None:
    from ragbudget import use_bundled_tiktoken_files

    use_bundled_tiktoken_files()


def _seconds(fn: Callable[[str], object], texts: list[str], repeats: int = 5) -> float:
    from ragbudget.estimate._model import clear_caches

    best = float("inf")
    for _ in range(repeats):
        clear_caches()  # the estimate's word cache starts cold in every round
        start = time.perf_counter()
        for text in texts:
            fn(text)
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    _offline_tiktoken()
    import tiktoken
    from ragbudget import get_counter

    rows = json.loads(gzip.decompress(SAMPLE.read_bytes()))
    texts = [row["text"] for row in rows]
    estimate = get_counter("estimate").count
    print(f"{len(texts)} held-out chunks, {sum(map(len, texts)):,} characters; default `estimate`")
    header = ("encoding", "family", "median |err|", "worst under", "len//4 worst")
    print(f"{header[0]:12} {header[1]:15} {header[2]:>12} {header[3]:>12} {header[4]:>12}")
    for name in ("cl100k_base", "o200k_base"):
        enc = tiktoken.get_encoding(name)
        for family in sorted({row["family"] for row in rows}):
            mine = [row["text"] for row in rows if row["family"] == family]
            truth = [len(enc.encode_ordinary(t)) for t in mine]
            errors = [estimate(t) / n - 1 for t, n in zip(mine, truth, strict=True)]
            quarter = [len(t) // 4 / n - 1 for t, n in zip(mine, truth, strict=True)]
            print(
                f"{name:12} {family:15} {100 * statistics.median(map(abs, errors)):11.1f}% "
                f"{100 * max(0.0, -min(errors)):11.1f}% {100 * max(0.0, -min(quarter)):11.1f}%"
            )
        ours = _seconds(estimate, texts)
        theirs = _seconds(enc.encode_ordinary, texts)
        print(f"speed: estimate is {theirs / ours:.1f}x tiktoken {name} encode_ordinary\n")


if __name__ == "__main__":
    main()
