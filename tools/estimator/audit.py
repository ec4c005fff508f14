"""Real text on this machine that no family of the tables samples: is the estimate safe on it?

    python tools/estimator/audit.py            # print the table
    python tools/estimator/audit.py --docs     # also write it into docs/estimator.md

The families (corpus.py, families.py) sample many kinds of files; this looks at a few more
kinds, found where a build machine has them: glibc's locale sources, man pages (groff), npm's
JavaScript and markdown, LLVM's TableGen files and C++ headers, `/etc` configuration, type
stubs. Up to 200 files of each kind, one chunk cut from each like the corpus's (100-4,000
characters), counted by the estimate and by tiktoken. Nothing here is fitted on; a kind with
fewer than 10 chunks on this machine is left out.
"""

from __future__ import annotations

import gzip
import random
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import corpus  # noqa: E402
import report  # noqa: E402
import tiktoken  # noqa: E402
import unseen  # noqa: E402
from ragbudget import use_bundled_tiktoken_files  # noqa: E402

DOCS = HERE.parents[1] / "docs" / "estimator.md"
KINDS = {
    "glibc locale sources": (Path("/usr/share/i18n/locales"), "*"),
    "man pages (groff)": (corpus.SHARE / "man", "man[1-8]/*.gz"),
    "npm's JavaScript": (Path("/usr/lib/node_modules/npm/node_modules"), "*/lib/*.js"),
    "npm's markdown": (Path("/usr/lib/node_modules/npm/node_modules"), "*/*.md"),
    "LLVM TableGen": (Path("/usr/lib"), "llvm-*/include/llvm/**/*.td"),
    "LLVM C++ headers": (Path("/usr/lib"), "llvm-*/include/llvm/ADT/*.h"),
    "/etc configuration": (Path("/etc"), "*.conf"),
    "type stubs (.pyi)": (corpus.SITE_DIRS[0], "**/*.pyi"),
}
FILES = 200
MIN_CHUNKS = 10


def _read(path: Path) -> str:
    try:
        data = path.read_bytes()
        return (gzip.decompress(data) if path.suffix == ".gz" else data).decode("utf-8")
    except (OSError, UnicodeDecodeError, gzip.BadGzipFile, EOFError):
        return ""


def chunks_of(root: Path, pattern: str, rng: random.Random) -> list[str]:
    paths = sorted(p for p in root.glob(pattern) if p.is_file()) if root.is_dir() else []
    rng.shuffle(paths)
    out = []
    for path in paths:
        text = _read(path)
        if len(text) >= corpus.MIN_CHARS:
            out.append(corpus._cut(text, rng))
        if len(out) >= FILES:
            break
    return [c for c in out if len(c) >= corpus.MIN_CHARS]


def table() -> str:
    use_bundled_tiktoken_files()
    encs = {name: tiktoken.get_encoding(name) for name in ("cl100k_base", "o200k_base")}
    rows = [
        "| kind | chunks | `estimate` vs the larger | `estimate:cl100k_base` "
        "| `estimate:o200k_base` | `len // 4` vs the larger |",
        "|---|---|---|---|---|---|",
    ]
    for kind, (root, pattern) in KINDS.items():
        texts = chunks_of(root, pattern, random.Random(kind))
        if len(texts) < MIN_CHUNKS:
            continue
        cells = (acc.cell(mark=True) for acc in unseen.measure(texts, encs).values())
        rows.append(f"| {kind} | {len(texts)} | " + " | ".join(cells) + " |")
    return (
        "Chunks of real files of kinds no family samples, measured by `python "
        "tools/estimator/audit.py`. Each cell: median |error| / 99th-percentile under-count / "
        "worst under-count of a chunk of 200 characters or more (bold where the median or the "
        "99th percentile exceeds 10% or the worst 25%).\n\n" + "\n".join(rows)
    )


def main() -> int:
    return report.table_main(__doc__.splitlines()[0], table, DOCS, "audit-table")


if __name__ == "__main__":
    raise SystemExit(main())
