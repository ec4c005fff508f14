"""How the estimate does on languages the calibration corpus never saw (`make bench-estimator`).

    python tools/estimator/unseen.py            # print the table
    python tools/estimator/unseen.py --docs     # also write it into docs/estimator.md

The corpus (corpus.py) draws on gettext catalogues in about 50 languages; this machine has
catalogues in others, some in scripts the fit never met (Tibetan, Odia, Thaana, Shavian,
Cherokee) and some in familiar scripts with other vocabularies (Kazakh, Yiddish, Uyghur,
Pashto, Maithili). Their translated strings are cut into chunks of 100-4,000 characters like
the corpus's and counted by the estimate and by tiktoken. Nothing here is fitted on.
"""

from __future__ import annotations

import argparse
import math
import random
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import corpus  # noqa: E402
import report  # noqa: E402
import tiktoken  # noqa: E402
from ragbudget import use_bundled_tiktoken_files  # noqa: E402
from ragbudget._estimate import estimate_tokens  # noqa: E402

DOCS = HERE.parents[1] / "docs" / "estimator.md"
LANGUAGES = {
    "dz": "Dzongkha (Tibetan)",
    "or": "Odia",
    "as": "Assamese (Bengali script)",
    "mai": "Maithili (Devanagari)",
    "dv": "Dhivehi (Thaana)",
    "ti": "Tigrinya (Ethiopic)",
    "chr": "Cherokee",
    "en@shaw": "English in Shavian",
    "yi": "Yiddish (Hebrew script)",
    "ug": "Uyghur (Arabic script)",
    "ps": "Pashto",
    "kk": "Kazakh (Cyrillic)",
}
CHUNKS = 200


def chunks_of(lang: str, rng: random.Random) -> list[str]:
    paths = sorted((corpus.LOCALE / lang / "LC_MESSAGES").glob("*.mo"))
    text = "\n".join(corpus.read_mo(p) for p in paths)
    if len(text) < corpus.MIN_CHARS:
        return []
    out = [corpus._cut(text, rng) for _ in range(CHUNKS)]
    return [c for c in out if len(c) >= corpus.MIN_CHARS and not c.isascii()]


def cell(estimates: list[int], truths: list[int]) -> str:
    return report.accuracy(estimates, truths).cell(mark=True)


def table() -> str:
    use_bundled_tiktoken_files()
    encs = {name: tiktoken.get_encoding(name) for name in ("cl100k_base", "o200k_base")}
    rows = [
        "| language | chunks | `estimate` vs the larger | `estimate:cl100k_base` "
        "| `estimate:o200k_base` | `len // 4` vs the larger |",
        "|---|---|---|---|---|---|",
    ]
    for lang, name in LANGUAGES.items():
        texts = chunks_of(lang, random.Random(lang))
        if len(texts) < 20:
            continue
        truth = {e: [len(enc.encode_ordinary(t)) for t in texts] for e, enc in encs.items()}
        larger = list(map(max, *truth.values()))
        cells = [
            cell([estimate_tokens(t) for t in texts], larger),
            *(cell([estimate_tokens(t, e) for t in texts], truth[e]) for e in encs),
            cell([math.floor(len(t) / 4) or 1 for t in texts], larger),
        ]
        rows.append(f"| {name} | {len(texts)} | " + " | ".join(cells) + " |")
    return (
        "Chunks of gettext catalogues in languages absent from the calibration corpus, measured "
        "by `python tools/estimator/unseen.py`. Each cell: median |error| / "
        "99th-percentile under-count / worst under-count (bold where the median or the 99th "
        "percentile exceeds 10% or the worst 25%).\n\n" + "\n".join(rows)
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", action="store_true", help="write the table into the docs")
    args = parser.parse_args()
    out = table()
    print(out)
    if args.docs:
        report.replace_block(DOCS, "unseen-table", out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
