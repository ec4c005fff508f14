"""Issue 52's crash, run N times: readers search an embedded store in a loop (two threads each,
as `ragbudget serve` runs tool calls) while `ragbudget ingest` writes a copy of the same files
under another folder (a second checkout) into the same store. Prints each reader's fate
(exit status -11 is SIGSEGV) and how many runs lost a reader.

    uv run --all-packages --frozen python tools/concurrent_ingest.py [--runs 6] [--readers 3]
        [--source DIR]

The files are the tracked files of `--source` (a git checkout; default: this repository).
Takes about two minutes a run on two cores. Measure an older tree by putting its `src`
folders first on PYTHONPATH.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RAGBUDGET = Path(sys.executable).with_name("ragbudget")
READER = """
import sys, threading, time
from ragbudget_server.store import DocumentStore
store = DocumentStore(path=sys.argv[1])
end = time.monotonic() + float(sys.argv[2])
queries = ["store search budget", "cursor snapshot", "ingest lock", "tool error", "html escape"]
counts, lock = [0, 0], threading.Lock()
def loop(k):
    n = k
    while time.monotonic() < end:
        try:
            store.search(queries[n % len(queries)], max_tokens=2000)
            failed = 0
        except Exception as exc:
            print(repr(exc)[:300], file=sys.stderr, flush=True)
            failed = 1
        with lock:
            counts[failed] += 1
        n += 1
threads = [threading.Thread(target=loop, args=(k,)) for k in range(2)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(f"answered={counts[0]} failed={counts[1]}", flush=True)
"""


def one_run(source: Path, readers: int, seconds: float) -> list[int | str]:
    env = {**os.environ, "ANONYMIZED_TELEMETRY": "False"}
    with tempfile.TemporaryDirectory(prefix="ragbudget-concurrent-") as folder:
        root = Path(folder)
        first, copy, db = root / "checkout", root / "vendor" / "checkout", root / "db"
        first.mkdir()
        archive = subprocess.run(
            ["git", "-C", str(source), "archive", "HEAD"], capture_output=True, check=True
        )
        subprocess.run(["tar", "-x", "-C", str(first)], input=archive.stdout, check=True)
        shutil.copytree(first, copy)
        args = [str(RAGBUDGET), "ingest"]
        subprocess.run(
            [*args, str(first), "--db", str(db)], env=env, capture_output=True, check=True
        )
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", READER, str(db), str(seconds)],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for _ in range(readers)
        ]
        time.sleep(3)
        started = time.monotonic()
        ingest = subprocess.run(
            [*args, str(copy), "--db", str(db)], env=env, capture_output=True, text=True
        )
        took = time.monotonic() - started
        fates: list[int | str] = []
        for proc in procs:
            try:
                out, err = proc.communicate(timeout=seconds + 300)
                fate: int | str = proc.returncode
            except subprocess.TimeoutExpired:
                proc.kill()
                out, err = proc.communicate()
                fate = "hung"
            answered = out.strip() or "no answer count"
            print(
                f"  reader: exit {fate}, {answered}, {len(err.splitlines())} error lines; "
                f"ingest exit {ingest.returncode} in {took:.0f} s",
                flush=True,
            )
            fates.append(fate)
        return fates


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=6)
    parser.add_argument("--readers", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=80.0, help="how long readers search")
    parser.add_argument("--source", type=Path, default=ROOT)
    options = parser.parse_args()
    lost = 0
    for run in range(options.runs):
        print(f"run {run + 1}:", flush=True)
        fates = one_run(options.source, options.readers, options.seconds)
        lost += any(f != 0 for f in fates)
    print(f"runs that lost a reader: {lost} of {options.runs}")


if __name__ == "__main__":
    main()
