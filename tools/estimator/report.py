"""Measure counters on the held-out split and print the tables of docs/estimator.md."""

from __future__ import annotations

import argparse
import re
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from corpus import FAMILIES, Chunk

LIMIT = 10.0  # percent: the bound for median |error| and p99 under-count
WORST = 25.0  # percent: the bound for any single chunk's under-count

Counter = Callable[[str], int]


@dataclass(frozen=True)
class Accuracy:
    median_abs: float  # percent
    p99_under: float  # percent
    worst_under: float  # percent, of chunks of 200 characters or more

    @property
    def ok(self) -> bool:
        return self.median_abs <= LIMIT and self.p99_under <= LIMIT and self.worst_under <= WORST

    def cell(self, *, mark: bool = False) -> str:
        text = f"{self.median_abs:.1f}% / {self.p99_under:.1f}% / {self.worst_under:.0f}%"
        return f"**{text}**" if mark and not self.ok else text


def quantile(values: Sequence[float], q: float) -> float:
    """The `q` quantile of `values` (0 when empty), interpolated between the two nearest ranks
    as numpy's default does: every table of the tools reads its 99th percentiles with it."""
    if not values:
        return 0.0
    ordered = sorted(values)
    pos = q * (len(ordered) - 1)
    low = int(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


def accuracy(
    estimates: Sequence[int], truths: Sequence[int], sizes: Sequence[int] | None = None
) -> Accuracy:
    """`sizes`: the chunks' lengths in characters (the worst under-count counts those of 200
    or more; all when not given)."""
    errors = [e / t - 1 for e, t in zip(estimates, truths, strict=True) if t > 0]
    under = [max(0.0, -err) for err in errors]
    long = [u for u, n in zip(under, sizes or [200] * len(under), strict=True) if n >= 200]
    return Accuracy(
        100 * statistics.median(abs(err) for err in errors),
        100 * quantile(under, 0.99),
        100 * max(long, default=0.0),
    )


def throughputs(
    methods: Mapping[str, Callable[[Any], object]],
    texts: Sequence[Any],
    repeats: int = 5,
    reset: Callable[[], None] = lambda: None,
    chars: int | None = None,
) -> list[float]:
    """Millions of characters per second for each method, best of `repeats` rounds.

    The methods take turns within each round, so a busy machine slows them alike; `reset` runs
    before each method's round (the estimate's word caches start cold in every round). `texts`
    are the methods' inputs, `chars` the characters they stand for (default: their lengths).
    """
    chars = sum(map(len, texts)) if chars is None else chars
    best = [float("inf")] * len(methods)
    for _ in range(repeats):
        for i, counter in enumerate(methods.values()):
            reset()
            start = time.perf_counter()
            for text in texts:
                counter(text)
            best[i] = min(best[i], time.perf_counter() - start)
    return [chars / seconds / 1e6 for seconds in best]


def accuracy_table(
    chunks: Sequence[Chunk],
    truth: Sequence[int],
    methods: dict[str, Counter],
    encoding: str,
    families: Sequence[str] = FAMILIES,
    held_out: dict[str, str] | None = None,
) -> tuple[str, dict[str, dict[str, Accuracy]]]:
    """Markdown table: one row per family, one `median |error| / p99 under-count / worst
    under-count` per method; `held_out`: family -> what of it is held out (a column)."""
    results: dict[str, dict[str, Accuracy]] = {}
    split = " held out |" if held_out else ""
    head = f"| {encoding} | chunks |{split} " + " | ".join(f"`{m}`" for m in methods) + " |"
    lines = [head, "|" + "---|" * (len(methods) + 2 + bool(held_out))]
    for family in families:
        idx = [i for i, c in enumerate(chunks) if c.family == family]
        if not idx:
            continue
        texts = [chunks[i].text for i in idx]
        results[family] = {
            name: accuracy([fn(t) for t in texts], [truth[i] for i in idx], list(map(len, texts)))
            for name, fn in methods.items()
        }
        cells = [
            acc.cell(mark=name.startswith("estimate")) for name, acc in results[family].items()
        ]
        if held_out:
            cells.insert(0, held_out.get(family, ""))
        lines.append(f"| {family} | {len(idx)} | " + " | ".join(cells) + " |")
    return "\n".join(lines), results


def replace_block(readme: Path, mark: str, body: str) -> None:
    """Put `body` between the `<!-- mark -->` and `<!-- /mark -->` lines of `readme`."""
    text = readme.read_text(encoding="utf-8")
    start, end = f"<!-- {mark} -->", f"<!-- /{mark} -->"
    pattern = re.compile(re.escape(start) + ".*?" + re.escape(end), re.S)
    if not pattern.search(text):
        raise SystemExit(f"{readme} has no {start} ... {end} block")
    readme.write_text(pattern.sub(lambda _: f"{start}\n{body}\n{end}", text), encoding="utf-8")


def show(out: str, docs: Path | None, mark: str) -> int:
    """Print a table tool's `out`; if `docs` is given (`--docs`), also write it into the
    `mark` block of that file. 0, the command's exit status."""
    print(out)
    if docs is not None:
        replace_block(docs, mark, out)
    return 0


def table_main(description: str, table: Callable[[], str], docs: Path, mark: str) -> int:
    """A table tool's command line: print `table()`; with `--docs`, also write it into the
    `mark` block of `docs`."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--docs", action="store_true", help="write the table into the docs")
    args = parser.parse_args()
    return show(table(), docs if args.docs else None, mark)


def speed_table(
    chunks: Sequence[Chunk],
    methods: dict[str, Counter],
    ratios: Sequence[tuple[str, str]] = (),
    families: Sequence[str] = FAMILIES,
    reset: Callable[[], None] = lambda: None,
) -> str:
    """Throughput per family and method, then `a / b` speed ratios of the same run (`reset`:
    see `throughputs`)."""
    head = "| M chars/s | " + " | ".join(f"`{m}`" for m in methods)
    head += "".join(f" | `{a}` / `{b}`" for a, b in ratios) + " |"
    lines = [head, "|" + "---|" * (len(methods) + len(ratios) + 1)]
    names = list(methods)
    for family in families:
        texts = [c.text for c in chunks if c.family == family]
        if texts:
            speeds = throughputs(methods, texts, reset=reset)
            cells = [f"{speed:.2f}" for speed in speeds]
            cells += [f"{speeds[names.index(a)] / speeds[names.index(b)]:.2f}x" for a, b in ratios]
            lines.append(f"| {family} | " + " | ".join(cells) + " |")
    return "\n".join(lines)
