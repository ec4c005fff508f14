"""Draw the docs' plots from the benchmarks' tables: estimator error by text family.

    python benchmarks/plot_figures.py      # or: make figures

Reads the `<!-- estimator-table -->` block that `make bench-estimator` writes into
docs/estimator.md and draws docs/img/estimator-error.png: for each encoding, the median
|error| and the 99th-percentile under-count of each counter, by family. When the page or the
block is missing it says so and draws nothing.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "docs" / "estimator.md"
OUT = ROOT / "docs" / "img" / "estimator-error.png"
BLOCK = re.compile(r"<!-- estimator-table -->\n(.*?)<!-- /estimator-table -->", re.S)
CELL = re.compile(r"([\d.]+)% / ([\d.]+)%(?: / [\d.]+%)?")  # median / p99 under / worst
SKIP_COLUMNS = {"UTF-8 bytes"}  # never under-counts, over-counts 2-4x: off the scale


def error_tables(markdown: str) -> dict[str, dict[str, dict[str, tuple[float, float]]]]:
    """{encoding: {counter: {family: (median |error| %, p99 under-count %)}}} from the block."""
    match = BLOCK.search(markdown)
    if match is None:
        return {}
    tables: dict[str, dict[str, dict[str, tuple[float, float]]]] = {}
    header: list[str] = []
    for line in match.group(1).splitlines():
        cells = [c.strip().strip("`*") for c in line.strip().strip("|").split("|")]
        if len(cells) < 3 or set(line) <= set("|-: "):
            continue
        if cells[1] == "chunks":
            header = cells
            tables[cells[0]] = {}
        elif header and cells[1].isdigit() and header[0] in tables:
            for name, value in zip(header[2:], cells[2:], strict=False):
                found = CELL.fullmatch(value.replace("*", ""))
                if found and name not in SKIP_COLUMNS:
                    pair = (float(found.group(1)), float(found.group(2)))
                    tables[header[0]].setdefault(name, {})[cells[0]] = pair
        else:
            header = []
    return tables


def plot(tables: dict[str, dict[str, dict[str, tuple[float, float]]]], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(tables), 2, figsize=(12, 4 * len(tables)), squeeze=False)
    for row, (encoding, counters) in enumerate(tables.items()):
        families = list(next(iter(counters.values())))
        width = 0.8 / len(counters)
        for col, title in enumerate(("median |error|", "99th-percentile under-count")):
            ax = axes[row][col]
            for i, (counter, cells) in enumerate(counters.items()):
                values = [min(cells[f][col], 100.0) for f in families]
                xs = [x + i * width for x in range(len(families))]
                ax.bar(xs, values, width, label=counter)
            ax.axhline(10, color="black", linewidth=0.8, linestyle="--")
            ax.set_xticks([x + 0.4 - width / 2 for x in range(len(families))], families,
                          rotation=30, ha="right")  # fmt: skip
            ax.set_ylim(0, 100)
            ax.set_ylabel("% of the true count (capped at 100)")
            ax.set_title(f"{encoding}: {title}")
            if col == 0:
                ax.legend(fontsize=8)
    fig.suptitle("Token count error by text family, held-out chunks (dashed: 10%)")
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=80)
    plt.close(fig)


def main() -> int:
    if not SOURCE.exists():
        print(f"skipped: {SOURCE.relative_to(ROOT)} does not exist", file=sys.stderr)
        return 0
    tables = error_tables(SOURCE.read_text(encoding="utf-8"))
    if not tables:
        print(f"skipped: no estimator-table block in {SOURCE.relative_to(ROOT)}", file=sys.stderr)
        return 0
    plot(tables, OUT)
    print(f"wrote {OUT.relative_to(ROOT)} ({', '.join(tables)})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
