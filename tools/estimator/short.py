"""How the default estimate errs on short texts, which the tables (100-4,000 characters) leave out.

    python tools/estimator/short.py

Prints the default estimate's median relative error against the larger of the two encodings'
counts (positive: over) on the held-out chunks of the ASCII natural families (code, prose,
markdown, JSON, logs) by length, then on 3,000 lines of 3-60 characters drawn from a few
standard-library modules, with how many of those are under-counted and by how much at most
(docs/estimator.md, Measured).
"""

from __future__ import annotations

import random
import statistics
import sys
import sysconfig
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import corpus  # noqa: E402
import tiktoken  # noqa: E402
from ragbudget import use_bundled_tiktoken_files  # noqa: E402
from ragbudget.estimate._model import estimate_tokens  # noqa: E402

FAMILIES = ("code", "prose", "markdown", "json", "logs")
BUCKETS = ((100, 200), (200, 500), (500, 1500), (1500, 10**9))
MODULES = ("argparse.py", "textwrap.py", "ast.py", "inspect.py", "typing.py", "pydoc.py")
LINES = 3000


def main() -> int:
    use_bundled_tiktoken_files()
    encs = [tiktoken.get_encoding(name) for name in ("cl100k_base", "o200k_base")]

    def truth(text: str) -> int:
        return max(len(enc.encode_ordinary(text)) for enc in encs)

    errors: dict[tuple[int, int], list[float]] = {bucket: [] for bucket in BUCKETS}
    for chunk in corpus.build_corpus():
        if chunk.split == "test" and chunk.family in FAMILIES:
            low, high = next(b for b in BUCKETS if b[0] <= len(chunk.text) < b[1])
            errors[low, high].append(estimate_tokens(chunk.text) / truth(chunk.text) - 1)
    for (low, high), found in errors.items():
        span = f"{low}-{high}" if high < 10**9 else f"{low}+"
        print(
            f"held-out {', '.join(FAMILIES)}, {span} characters: {len(found)} chunks, "
            f"median error {100 * statistics.median(found):+.1f}%"
        )
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    lines = [
        line.strip()
        for name in MODULES
        for line in (stdlib / name).read_text(encoding="utf-8").splitlines()
        if 3 <= len(line.strip()) <= 60
    ]
    lines = random.Random(1).sample(lines, LINES)
    counts = [(estimate_tokens(line), truth(line)) for line in lines]
    under = [real - estimate for estimate, real in counts if estimate < real]
    print(
        f"{LINES} lines of 3-60 characters of {', '.join(MODULES)}: median error "
        f"{100 * statistics.median(e / t - 1 for e, t in counts):+.1f}%, {len(under)} under "
        f"(by {max(under, default=0)} tokens at most)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
