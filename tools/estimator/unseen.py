"""How the estimate does on languages the calibration corpus never saw (`make bench-estimator`).

    python tools/estimator/unseen.py            # print the tables
    python tools/estimator/unseen.py --docs     # also write them into docs/estimator.md
    python tools/estimator/unseen.py --words    # what unknown ASCII words cost (see below)

The corpus (corpus.py) draws on gettext catalogues in about 50 languages; this machine has
catalogues in about 110 more, and in variants of the corpus's own (`pt_PT`, `sr@latin`,
`zh_Hant`). Twelve are named in the first table: scripts the fit never met (Tibetan, Odia,
Thaana, Shavian, Cherokee) and familiar scripts with other vocabularies (Kazakh, Yiddish,
Uyghur, Pashto, Maithili). The second table takes every catalogue directory the corpus does
not read, the twelve among them, and lists where a counter misses the issue's bounds on
under-counting. Their translated strings are cut into chunks of 100-4,000 characters like the
corpus's and counted by the estimate and by tiktoken. Nothing here is fitted on.
"""

from __future__ import annotations

import argparse
import math
import random
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import corpus  # noqa: E402
import fit  # noqa: E402
import report  # noqa: E402
import tiktoken  # noqa: E402
from ragbudget import use_bundled_tiktoken_files  # noqa: E402
from ragbudget.estimate._model import estimate_tokens, vocabulary  # noqa: E402
from ragbudget.estimate._text import _WORD_TABLE, FOREIGN_COSTS, TARGETS  # noqa: E402

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
MIN_CHUNKS = 20  # a language with fewer chunks of non-ASCII text is left out
READ = frozenset(corpus.CJK_LANGS + corpus.CYR_GREEK_LANGS + corpus.EURO_LANGS + corpus.OTHER_LANGS)
"""The catalogue directories the corpus reads."""
# each counter and what it is measured against: the default against the larger count
COUNTERS: dict[str, tuple[Callable[[str], int], tuple[str, ...]]] = {
    "`estimate`": (estimate_tokens, ("cl100k_base", "o200k_base")),
    "`estimate:cl100k_base`": (lambda t: estimate_tokens(t, "cl100k_base"), ("cl100k_base",)),
    "`estimate:o200k_base`": (lambda t: estimate_tokens(t, "o200k_base"), ("o200k_base",)),
}


def chunks_of(lang: str, rng: random.Random) -> list[str]:
    paths = sorted((corpus.LOCALE / lang / "LC_MESSAGES").glob("*.mo"))
    text = "\n".join(corpus.read_mo(p) for p in paths)
    if len(text) < corpus.MIN_CHARS:
        return []
    out = [corpus._cut(text, rng) for _ in range(CHUNKS)]
    return [c for c in out if len(c) >= corpus.MIN_CHARS and not c.isascii()]


def unread() -> list[str]:
    """Every catalogue directory on this machine that the corpus does not read."""
    if not corpus.LOCALE.is_dir():
        return []
    return sorted(p.name for p in corpus.LOCALE.iterdir() if p.is_dir() and p.name not in READ)


def measure(texts: list[str], encs: dict[str, Any]) -> dict[str, report.Accuracy]:
    """Each counter's accuracy on `texts`, and `len // 4`'s against the larger count."""
    truth = {e: [len(enc.encode_ordinary(t)) for t in texts] for e, enc in encs.items()}
    sizes = list(map(len, texts))
    out = {}
    for name, (counter, against) in COUNTERS.items():
        target = [max(counts) for counts in zip(*(truth[e] for e in against), strict=True)]
        out[name] = report.accuracy(list(map(counter, texts)), target, sizes)
    larger = [max(counts) for counts in zip(*truth.values(), strict=True)]
    out["`len // 4`"] = report.accuracy([math.floor(len(t) / 4) or 1 for t in texts], larger, sizes)
    return out


def _safe(acc: report.Accuracy) -> bool:
    """Within the issue's bounds on under-counting (medians aside)."""
    return acc.p99_under <= report.LIMIT and acc.worst_under <= report.WORST


def tables() -> str:
    use_bundled_tiktoken_files()
    encs = {name: tiktoken.get_encoding(name) for name in ("cl100k_base", "o200k_base")}
    results: dict[str, dict[str, report.Accuracy]] = {}
    for lang in sorted({*LANGUAGES, *unread()}):
        texts = chunks_of(lang, random.Random(lang))
        if len(texts) >= MIN_CHUNKS:
            results[lang] = measure(texts, encs)
    named = [
        "| language | `estimate` vs the larger | `estimate:cl100k_base` "
        "| `estimate:o200k_base` | `len // 4` vs the larger |",
        "|---|---|---|---|---|",
    ]
    for lang, name in LANGUAGES.items():
        if lang in results:
            cells = (acc.cell(mark=True) for acc in results[lang].values())
            named.append(f"| {name} | " + " | ".join(cells) + " |")
    summary = [
        "| counter | catalogues | 99th percentile under 10% | no chunk over 25% under "
        "| missing (99th percentile / worst chunk under) |",
        "|---|---|---|---|---|",
    ]
    for name in COUNTERS:
        accs = {lang: r[name] for lang, r in results.items()}
        misses = sorted((a for a in accs.items() if not _safe(a[1])), key=lambda a: -a[1].p99_under)
        listed = ", ".join(
            f"{lang} {a.p99_under:.1f}% / {a.worst_under:.0f}%" for lang, a in misses
        )
        summary.append(
            f"| {name} | {len(accs)} "
            f"| {sum(a.p99_under <= report.LIMIT for a in accs.values())} "
            f"| {sum(a.worst_under <= report.WORST for a in accs.values())} "
            f"| {listed or 'none'} |"
        )
    return (
        "Chunks of gettext catalogues the calibration corpus does not read, measured by "
        "`python tools/estimator/unseen.py`, up to 200 per catalogue directory. The named "
        "languages: each cell is median |error| / 99th-percentile under-count / worst "
        "under-count (bold where the median or the 99th percentile exceeds 10% or the worst "
        "25%).\n\n" + "\n".join(named) + "\n\nEvery catalogue directory the corpus does not "
        f"read that gives {MIN_CHUNKS} chunks or more (languages and variants, the twelve "
        "above among them), by counter: how many hold the under-count bounds, and the ones "
        "that miss either, by their directory's name.\n\n" + "\n".join(summary)
    )


WORD_LENGTH = 8


def foreign_costs(chunks: list[corpus.Chunk]) -> str:
    """Where FOREIGN_COSTS come from: per encoding, tokens per character of the unknown words
    (each counted after a space) of the fitted European-language chunks where they are half of
    the words or more; the floor takes the 75th percentile."""
    rows = []
    for name in TARGETS:
        enc = tiktoken.get_encoding(name)
        known = vocabulary(name).words
        costs = []
        for chunk in chunks:
            if chunk.split != "fit" or chunk.family != "european":
                continue
            found = fit.foreign_words(chunk.text, known)
            unknown = [w.decode("utf-8", "surrogatepass") for w in found]
            if unknown:
                tokens = sum(len(enc.encode_ordinary(" " + w)) for w in unknown)
                costs.append(tokens / sum(map(len, unknown)))
        p25, p50, p75 = (report.quantile(costs, q) for q in (0.25, 0.5, 0.75))
        rows.append(
            f"{name}: {len(costs)} fitted European chunks, tokens per character of their "
            f"unknown words p25 {p25:.3f} median {p50:.3f} p75 {p75:.3f} "
            f"(FOREIGN_COSTS: {FOREIGN_COSTS[name]})"
        )
    return "\n".join(rows)


def word_costs(langs: list[str]) -> str:
    """cl100k tokens per unknown ASCII word (not in the vocabulary) of WORD_LENGTH letters, on
    held-out chunks of code, prose and European languages and on the catalogues `langs`: the
    estimate prices such words by their length alone. Then `foreign_costs`."""
    use_bundled_tiktoken_files()
    enc = tiktoken.get_encoding("cl100k_base")
    known = vocabulary("cl100k_base").words
    texts = {f"{lang} (catalogue)": chunks_of(lang, random.Random(lang)) for lang in langs}
    chunks = corpus.build_corpus()
    for chunk in chunks:
        if chunk.split == "test" and chunk.family in ("code", "prose", "european"):
            texts.setdefault(f"{chunk.family} (held out)", []).append(chunk.text)
    rows = []
    for name, group in sorted(texts.items()):
        words = [
            word
            for text in group
            for word in text.encode("utf-8", "surrogatepass").translate(_WORD_TABLE).split()
            if len(word) == WORD_LENGTH and word.isascii() and word not in known
        ]
        tokens = sum(len(enc.encode_ordinary(" " + w.decode())) for w in words)
        rows.append(f"{name}: {tokens / max(1, len(words)):.2f} tokens per word ({len(words)})")
    return "\n".join(rows) + "\n" + foreign_costs(chunks)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", action="store_true", help="write the tables into the docs")
    parser.add_argument(
        "--words", nargs="*", metavar="LANG", help="tokens per unknown ASCII word instead"
    )
    args = parser.parse_args()
    if args.words is not None:
        print(word_costs(args.words or ["li", "kab", "sl", "sq", "et", "so", "uz", "lt", "af"]))
        return 0
    return report.show(tables(), DOCS if args.docs else None, "unseen-table")


if __name__ == "__main__":
    raise SystemExit(main())
