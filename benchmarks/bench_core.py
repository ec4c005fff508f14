"""fit() against serialising its result, and counters against raw tiktoken, side by side.

Goal: fit() with the default estimator costs less than `json.dumps` of the same chunks.
fit() counts chunks in rank order and stops at the first that does not fit, so its cost
follows what the budget holds, while `json.dumps` serialises every chunk; two budgets show both
sides: half the chunks' tokens, and an 8K prompt budget.
Run: make bench (or uv run python benchmarks/bench_core.py)
"""

from __future__ import annotations

import json
import logging
import sys
import timeit
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
import doc_figures
from _corpus import offline_tiktoken, stdlib_chunks
from ragbudget import Chunk, TiktokenCounter, fit, get_counter


def best(fn: object, number: int) -> float:
    """Best of 5 repeats, seconds per call."""
    return min(timeit.repeat(fn, number=number, repeat=5)) / number  # type: ignore[arg-type]


def main() -> None:
    offline_tiktoken()
    logging.getLogger("ragbudget").setLevel(logging.ERROR)
    texts = stdlib_chunks(1000)
    est = get_counter("estimate")
    tik = TiktokenCounter("cl100k_base")  # tiktoken itself (the spec prefers bpe-openai)
    import tiktoken

    enc = tiktoken.get_encoding("cl100k_base")
    print("fit() vs json.dumps of the same chunks, strategy='stop'")
    print(
        f"{'chunks':>7} {'budget':>14} {'counter':>22} {'kept':>5} {'fit ms':>9} "
        f"{'dumps ms':>9} {'fit/dumps':>10}"
    )
    results: dict[str, Any] = {"fit": [], "counters": []}
    for n in (50, 1000):
        chunks = [
            Chunk(id=f"c{i}", text=t, score=1 - i / n, metadata={"source": f"f{i}.py"})
            for i, t in enumerate(texts[:n])
        ]
        payload = [c.model_dump() for c in chunks]
        dumps = best(lambda p=payload: json.dumps(p), 20 if n == 50 else 3)
        for tc in (est, tik):
            total = sum(tc.count(t) for t in texts[:n])
            for label, budget in (("half of all", total // 2), ("8,192", 8192)):
                t_fit = best(
                    lambda c=chunks, b=budget, k=tc: fit(c, b, counter=k), 20 if n == 50 else 3
                )
                kept = fit(chunks, budget, counter=tc).info.returned_count
                print(
                    f"{n:>7} {label:>14} {tc.name:>22} {kept:>5} {t_fit * 1e3:>9.2f} "
                    f"{dumps * 1e3:>9.2f} {t_fit / dumps:>9.2f}x"
                )
                results["fit"].append(
                    {"chunks": n, "budget": label, "counter": tc.name, "kept": kept,
                     "fit_ms": t_fit * 1e3, "dumps_ms": dumps * 1e3}
                )  # fmt: skip
    total_chars = sum(len(t) for t in texts)
    raw = best(lambda: [enc.encode_ordinary(t) for t in texts], 3)
    print(f"\ncounter throughput on 1,000 stdlib chunks ({total_chars:,} chars)")
    print(f"{'counter':>24} {'MB/s':>8} {'vs raw tiktoken':>16}")
    print(f"{'raw tiktoken encode':>24} {total_chars / raw / 1e6:>8.2f} {1.0:>15.2f}x")
    results["counters"].append({"counter": "raw tiktoken", "mb_s": total_chars / raw / 1e6})
    bpe = get_counter("bpe:cl100k_base")  # ragbudget[bpe]: tiktoken's tokens
    for tc in (est, tik, bpe, get_counter("exact"), get_counter("chars:4")):
        t = best(lambda k=tc: [k.count(x) for x in texts], 3)
        print(f"{tc.name:>24} {total_chars / t / 1e6:>8.2f} {raw / t:>15.2f}x")
        results["counters"].append({"counter": tc.name, "mb_s": total_chars / t / 1e6})
    results["chars"] = total_chars
    doc_figures.save(__file__, results)


def table(results: dict[str, Any]) -> str:
    """docs/figures.md's table: fit() against `json.dumps` of the same chunks."""
    rows = [(f"{r['chunks']:,}", r["budget"], r["counter"], r["kept"], _ms(r["fit_ms"]),
             _ms(r["dumps_ms"]), f"{r['fit_ms'] / r['dumps_ms']:.2f}x")
            for r in results["fit"]]  # fmt: skip
    head = ["chunks", "budget", "counter", "kept", "`fit()`", "`json.dumps` of the chunks",
            "fit / dumps"]  # fmt: skip
    met = [f"{r['chunks']:,} chunks at {r['budget']}" for r in results["fit"]
           if r["counter"] == "estimate" and r["fit_ms"] < r["dumps_ms"]]  # fmt: skip
    return (
        doc_figures.grid(head, rows, "rllrrrr")
        + "\n\nThe goal, `fit()` with the default estimate under `json.dumps` of the same chunks: "
        + (f"met for {', '.join(met)}." if met else "not met in this run.")
    )


def table_counters(results: dict[str, Any]) -> str:
    """docs/figures.md's table: each counter's throughput beside raw tiktoken's."""
    raw = results["counters"][0]["mb_s"]
    rows = [(r["counter"], _figure(r["mb_s"]), f"{_figure(r['mb_s'] / raw)}x")
            for r in results["counters"]]  # fmt: skip
    return f"On the same 1,000 chunks ({results['chars']:,} characters):\n\n" + doc_figures.grid(
        ["counter", "MB/s", "vs raw tiktoken `encode_ordinary`"], rows, "lrr"
    )


def _figure(value: float) -> str:
    return f"{value:.2f}" if value < 10 else f"{value:.1f}" if value < 100 else f"{value:,.0f}"


def _ms(value: float) -> str:
    return f"{value:.2f} ms" if value < 10 else f"{value:.0f} ms"


if __name__ == "__main__":
    main()
