"""Run every benchmarks/bench_*.py in turn (what `make bench` does)."""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

HERE = Path(__file__).parent


def main() -> int:
    scripts = sorted(HERE.glob("bench_*.py"))
    wanted = set(sys.argv[1:])
    for script in scripts:
        if wanted and script.stem not in wanted:
            continue
        print(f"\n=== {script.stem} ===", flush=True)
        runpy.run_path(str(script), run_name="__main__")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
