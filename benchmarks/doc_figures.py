"""The docs' measured tables, written from the benchmarks' committed results.

    uv run --all-packages --frozen python benchmarks/doc_figures.py          # rewrite the blocks
    uv run --all-packages --frozen python benchmarks/doc_figures.py --check  # exit 1 when stale

One run of a benchmark writes its figures as JSON, `benchmarks/results/<key>.json` (committed):
the results, the command that ran, its date, the machine's cores and load average. A doc shows
them in a block between two marker comments:

    <!-- figures:<key> written by benchmarks/doc_figures.py from benchmarks/results/<key>.json -->
    ...
    <!-- /figures:<key> -->

and this module writes the block: a caption line naming the command, the date and the load,
then what the benchmark's own renderer makes of the results. `make bench` runs the benchmarks,
then this; `tests/test_doc_figures.py` re-renders every block from the committed JSON (no
benchmark runs) and fails when a block disagrees, when a marker has no JSON and when a JSON
has no marker.

Hooking a benchmark in (`bench_search_cost.py` is next):

1. At the end of its `main()`, gather what the table needs into a JSON-able dict and call
   `doc_figures.save(__file__, results)` (`sys.path` holds `benchmarks/` for every script;
   `key=` names the file when one script has several runs, as `bench_answer_in_context.a`).
2. In the same script, define `table(results: dict) -> str`: the markdown the block shows
   (rows, and any line a reader needs under them), from `results` alone. A second table of
   the same run is `table_<part>(results)`, shown by the marker `figures:<key>/<part>`.
   `grid(head, rows, align)` writes the markdown table. Keep the script's heavy imports
   (Chroma, fastmcp, frameworks) inside its functions, or cheap: the test imports each script
   to call its renderer.
3. Run the benchmark once, put the empty marker pair where the table goes, run this module,
   and commit the JSON with the doc. A `--quick` run is saved too, and its caption says so:
   commit a full run unless one takes too long to repeat.

For `bench_search_cost.py` that means: save its medians by store, counter, limit, budget and
mode (default and `evidence=False`), against the raw query's; render docs/store.md's
hand-kept `bench_search_cost` rows (its second **Figures** table) as `table(results)`, and
the ratios docs/evidence.md's **Cost** paragraph quotes as a `table_cost(results)` block
beside it (that paragraph then keeps its words and drops its figures). `--work` measures
something else (the tokenizer's work): give it its own key (`save(..., key=
"bench_search_cost.work")`) if a page is to show it.

A block says what one run measured. Prose beside it should not repeat its figures (they would
go stale); how a figure moved from one run to the next belongs in CHANGELOG.md.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shlex
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import date
from pathlib import Path
from types import ModuleType
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RESULTS = HERE / "results"
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
"""The pages blocks may sit in."""

BLOCK = re.compile(
    r"(?P<start><!-- figures:(?P<name>[\w.]+(?:/\w+)?)(?: [^\n]*)? -->\n)"
    r"(?P<body>.*?)"
    r"(?P<end><!-- /figures:(?P=name) -->)",
    re.S,
)
OPEN = re.compile(r"<!-- figures:([\w./]+)")


def save(script: str, results: dict[str, Any], *, key: str | None = None) -> Path:
    """Write one run's `results` as `benchmarks/results/<key>.json` (key: the script's name).

    Records beside them the command as it ran (`sys.argv`), whether it was the `--quick` run,
    the date, the cores and the load average at the end of the run.
    """
    bench = Path(script).stem
    key = key or bench
    args = sys.argv[1:]
    command = shlex.join(
        ["uv", "run", "--all-packages", "--frozen", "python", f"benchmarks/{bench}.py", *args]
    )
    one, five, fifteen = os.getloadavg()
    data = {
        "bench": bench,
        "command": command,
        "quick": "--quick" in args,
        "date": date.today().isoformat(),
        "cores": os.cpu_count(),
        "load_average": [round(one, 2), round(five, 2), round(fifteen, 2)],
        "results": results,
    }
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"{key}.json"
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {path.relative_to(ROOT)}", flush=True)
    return path


def grid(head: Sequence[str], rows: Iterable[Sequence[object]], align: str = "") -> str:
    """A markdown table: `head`'s cells, then each row's; `align` gives each column `l` (the
    default) or `r` (figures)."""
    rule = ["---:" if a == "r" else "---" for a in align.ljust(len(head), "l")]
    lines = [head, rule, *rows]
    return "\n".join("| " + " | ".join(str(cell) for cell in line) + " |" for line in lines)


class NoResults(LookupError):
    """A block names a run that has no JSON in `benchmarks/results/`."""


def load(key: str) -> dict[str, Any]:
    """The committed run `key` (`NoResults` naming the file and its benchmark when none)."""
    path = RESULTS / f"{key}.json"
    if not path.exists():
        msg = f"no {path.relative_to(ROOT)}: run benchmarks/{key.split('.')[0]}.py"
        raise NoResults(msg)
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def _module(bench: str) -> ModuleType:
    if bench in sys.modules:
        return sys.modules[bench]
    if str(HERE) not in sys.path:
        sys.path.insert(0, str(HERE))
    spec = importlib.util.spec_from_file_location(bench, HERE / f"{bench}.py")
    if spec is None or spec.loader is None:
        msg = f"no benchmarks/{bench}.py"
        raise SystemExit(msg)
    module = importlib.util.module_from_spec(spec)
    sys.modules[bench] = module
    spec.loader.exec_module(module)
    return module


def caption(data: dict[str, Any]) -> str:
    """The line above every block: the command, the date, the machine."""
    one, five, fifteen = data["load_average"]
    quick = " (the `--quick` run)" if data["quick"] else ""
    return (
        f"Measured by `{data['command']}`{quick} on {data['date']}, {data['cores']} cores, "
        f"load average {one:.2f} / {five:.2f} / {fifteen:.2f} (1 / 5 / 15 min).\n"
    )


def render(name: str) -> str:
    """The body of block `name` (`<key>` or `<key>/<part>`) from its committed JSON."""
    key, _, part = name.partition("/")
    data = load(key)
    renderer: Callable[[dict[str, Any]], str] = getattr(
        _module(data["bench"]), f"table_{part}" if part else "table"
    )
    body = renderer(data["results"]).strip("\n")
    return f"\n{caption(data)}\n{body}\n\n"  # blank lines: the markers stay out of the table


def blocks(text: str) -> Iterator[re.Match[str]]:
    """Every well-formed block of `text`."""
    return BLOCK.finditer(text)


def rewritten(text: str, missing: list[str] | None = None) -> str:
    """`text` with every block's body written afresh from its JSON; a block without one is
    left as it is and its message added to `missing` (raised when `missing` is None)."""

    def block(m: re.Match[str]) -> str:
        try:
            return f"{m['start']}{render(m['name'])}{m['end']}"
        except NoResults as error:
            if missing is None:
                raise
            missing.append(str(error))
            return m[0]

    return BLOCK.sub(block, text)


def names(text: str) -> list[str]:
    """The names of every opening marker of `text`, closed or not."""
    return OPEN.findall(text)


def main(argv: list[str]) -> int:
    stale: list[str] = []
    missing: list[str] = []
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8")
        opened, closed = names(text), [m["name"] for m in blocks(text)]
        if opened != closed:
            print(f"{doc}: a figures marker without its end: {sorted(set(opened) - set(closed))}")
            return 1
        new = rewritten(text, missing)
        if new == text:
            continue
        if "--check" in argv:
            stale.append(str(doc.relative_to(ROOT)))
        else:
            doc.write_text(new, encoding="utf-8")
            print(f"rewrote {doc.relative_to(ROOT)}")
    for message in missing:
        print(message)
    if stale:
        print(f"out of date: {', '.join(stale)}: run benchmarks/doc_figures.py")
    return 1 if stale or missing else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
