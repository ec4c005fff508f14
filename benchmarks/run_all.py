"""Run every benchmarks/bench_*.py in turn (what `make bench` does).

    python benchmarks/run_all.py [bench_name ...] [--quick]

Names pick scripts; flags (`--quick`: the smaller run of the scripts that have one) go to each.
"""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

HERE = Path(__file__).parent


def main() -> int:
    scripts = sorted(HERE.glob("bench_*.py"))
    args = sys.argv[1:]
    wanted = {a for a in args if not a.startswith("--")}
    flags = [a for a in args if a.startswith("--")]
    for script in scripts:
        if wanted and script.stem not in wanted:
            continue
        print(f"\n=== {script.stem} ===", flush=True)
        sys.argv = [str(script), *flags]
        runpy.run_path(str(script), run_name="__main__")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
