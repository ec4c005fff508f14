"""Run every benchmarks/bench_*.py in turn (what `make bench` does).

    python benchmarks/run_all.py [bench_name ...] [--quick]

Names pick scripts; flags (`--quick`: the smaller run of the scripts that have one) go to each.
A script listed in `RUNS` runs once per argument list there, the flags after them
(`bench_answer_in_context` once per held-out set).
A script that ends with `raise SystemExit(code)`, or raises, ends only itself: the others still
run, and the run exits 1 when any script exited with a code other than 0 (`bench_cursor_walks`
does when a walk misses or repeats a chunk) or raised (its traceback is printed). Each script
that owns doc figures writes its `benchmarks/results/*.json`; `make bench` then rewrites the
docs' blocks from them (`benchmarks/doc_figures.py`), whatever this exits with.
"""

from __future__ import annotations

import runpy
import sys
import traceback
from pathlib import Path

HERE = Path(__file__).parent
RUNS: dict[str, list[list[str]]] = {
    "bench_answer_in_context": [["--set", "a"], ["--set", "b"]],
}
"""Scripts run more than once, with the arguments of each run (the others run once, bare)."""


def main() -> int:
    scripts = sorted(HERE.glob("bench_*.py"))
    args = sys.argv[1:]
    wanted = {a for a in args if not a.startswith("--")}
    flags = [a for a in args if a.startswith("--")]
    failed: list[str] = []
    for script in scripts:
        if wanted and script.stem not in wanted:
            continue
        for extra in RUNS.get(script.stem, [[]]):
            label = " ".join([script.stem, *extra])
            print(f"\n=== {label} ===", flush=True)
            sys.argv = [str(script), *extra, *flags]
            try:
                runpy.run_path(str(script), run_name="__main__")
            except SystemExit as exit_:
                if exit_.code not in (None, 0):
                    failed.append(f"{label} (exit {exit_.code})")
            except Exception as error:  # one broken script must not stop the others
                traceback.print_exc()
                failed.append(f"{label} ({type(error).__name__})")
    if failed:
        print(f"\nfailed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
