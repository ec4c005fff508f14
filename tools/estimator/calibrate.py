"""Calibrate and measure ragbudget's token estimate (`make bench-estimator`).

    python tools/estimator/calibrate.py            # measure the shipped estimator
    python tools/estimator/calibrate.py --fit      # refit on this machine's corpus first
    python tools/estimator/calibrate.py --tables   # recompute the floor's tables only
    python tools/estimator/calibrate.py --docs     # also write the tables into docs/estimator.md
    python tools/estimator/calibrate.py --sample   # also rewrite the test sample

The corpus (see corpus.py) is rebuilt from files on this machine every run, and so are the
families nothing is fitted on (families.py: markup, SQL, certificates, DNA, base64...);
accuracy is measured on the held-out split only, against tiktoken's cl100k_base and o200k_base
(loaded offline from llama-index-core's bundled BPE files).
"""

from __future__ import annotations

import argparse
import gzip
import importlib
import json
import random
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))

import corpus  # noqa: E402
import families  # noqa: E402
import fit  # noqa: E402
import numpy as np  # noqa: E402
import origin  # noqa: E402
import report  # noqa: E402
import tiktoken  # noqa: E402
from ragbudget import use_bundled_tiktoken_files  # noqa: E402
from ragbudget.estimate import _data as _estimate_data  # noqa: E402
from ragbudget.estimate import _model as _estimate  # noqa: E402
from ragbudget.estimate._text import FOREIGN_COSTS  # noqa: E402

ENCODINGS = ("cl100k_base", "o200k_base")
DOCS = ROOT / "docs" / "estimator.md"
SAMPLE = ROOT / "tests" / "core" / "data" / "estimator_sample.json.gz"
SAMPLE_PER_FAMILY = 48
SAMPLE_PER_UNFITTED = 24  # the families nothing is fitted on (they only test safety)


def _tiktoken_offline() -> None:
    use_bundled_tiktoken_files()


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def refit(chunks: list[corpus.Chunk], truth: dict[str, list[int]], encs: dict[str, object]) -> None:
    global _estimate
    t0 = time.perf_counter()
    words, vocab = fit.build_vocabulary(chunks, encs)
    strict, strict_vocab = fit.strict_words(chunks, words, vocab)
    weak = fit.weak_by_target(encs, vocab)
    held = fit.held_by_target(encs)
    families = np.array([c.family for c in chunks])
    fit_mask = np.array([c.split == "fit" for c in chunks])
    ys = {e: np.array(truth[e], dtype=float) for e in ENCODINGS}
    ys[_estimate.DEFAULT_TARGET] = np.maximum(*ys.values())
    weights = {}
    for target, y in ys.items():
        vocabulary = _estimate.Vocabulary.build(
            strict, *strict_vocab[target], weak=weak[target], held=held[target]
        )
        x = fit.feature_matrix(chunks, vocabulary)
        coef = fit.fit_weights(x, y, families, fit_mask)
        scales = fit.safety_scales(x, y, coef, families, fit_mask, fit.MARGINS[target])
        _log(f"{target}: safety scales {', '.join(f'{s:.3f}' for s in scales)}")
        weights[target] = fit.scaled(coef, *scales)
    write_tables(chunks, encs, words, vocab, weights, weak, held)
    _log(f"refit and wrote {fit.DATA_FILE} in {time.perf_counter() - t0:.0f}s")


def write_tables(
    chunks: list[corpus.Chunk],
    encs: dict[str, object],
    words: list[str] | None = None,
    vocab: dict[str, tuple[list[int], str]] | None = None,
    weights: dict[str, object] | None = None,
    weak: dict[str, str] | None = None,
    held: dict[str, str] | None = None,
) -> None:
    """Write the data file with new rare letter pairs and the tables read from the encodings
    (`fit.encoding_tables`: block costs, symbol and space runs, letter runs...); the words,
    their token counts, the weights, the weak letters and the held pairs (features the
    weights were fitted with) are the ones given, or the shipped ones (`--tables`)."""
    global _estimate
    data = _estimate_data.load()
    if words is None or vocab is None or weights is None or weak is None or held is None:
        words = list(data.words)
        vocab = {t: ([int(d) for d in data.tokens[t]], data.single[t]) for t in ENCODINGS}
        vocab[_estimate.DEFAULT_TARGET] = ([], data.single[_estimate.DEFAULT_TARGET])
        weights = dict(data.weights)
        weak = dict(data.weak)
        held = dict(data.held)
    pairs = fit.rare_pairs(chunks)
    tables = fit.encoding_tables(encs, words)
    tables["script_costs"] = {
        name: fit.script_costs(chunks, enc, words, FOREIGN_COSTS[name])
        for name, enc in encs.items()
    }
    fit.write_data(words, vocab, weights, pairs, weak, held, tables)  # type: ignore[arg-type]
    _estimate_data.load.cache_clear()
    importlib.reload(importlib.import_module("ragbudget.estimate._text"))
    importlib.reload(importlib.import_module("ragbudget.estimate._floor"))
    _estimate = importlib.reload(_estimate)


def write_sample(test: list[corpus.Chunk]) -> None:
    rng = random.Random(7)
    rows = []
    for family in (*corpus.FAMILIES, *families.FAMILIES):
        pool = [c for c in test if c.family == family]
        size = SAMPLE_PER_FAMILY if family in corpus.FAMILIES else SAMPLE_PER_UNFITTED
        for c in rng.sample(pool, min(size, len(pool))):
            rows.append({"family": c.family, "source": c.source, "text": c.text})
    SAMPLE.parent.mkdir(parents=True, exist_ok=True)
    data = json.dumps(rows, ensure_ascii=False, indent=1).encode()
    SAMPLE.write_bytes(gzip.compress(data, mtime=0))
    _log(f"wrote {len(rows)} chunks, {SAMPLE.stat().st_size:,} bytes to {SAMPLE}")


def update_docs(tables: str) -> None:
    report.replace_block(DOCS, "estimator-table", tables)
    _log(f"updated the tables in {DOCS}")


def held_out_column(chunks: list[corpus.Chunk]) -> dict[str, str]:
    """family -> "held-out origins / all origins" (natural families), "all" (the others)."""
    seen: dict[tuple[str, str], set[str]] = {}
    for c in chunks:
        seen.setdefault((c.family, c.split), set()).add(origin.origin(c.source))
    out = dict.fromkeys(families.FAMILIES, "all")
    for f in corpus.FAMILIES:
        test, fit = seen.get((f, "test"), set()), seen.get((f, "fit"), set())
        out[f] = f"{len(test)} / {len(test | fit)}" if f != "emoji_chat" else "synthetic"
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fit", action="store_true", help="refit and rewrite estimate_v2.json")
    parser.add_argument(
        "--tables",
        action="store_true",
        help="recompute the rare letter pairs and block costs only, keeping the fitted weights",
    )
    parser.add_argument("--docs", action="store_true", help="write the tables into the docs")
    parser.add_argument("--sample", action="store_true", help="rewrite the test sample")
    parser.add_argument("--per-family", type=int, default=2000, help="chunks per family and split")
    parser.add_argument("--per-extra", type=int, default=400, help="chunks per unfitted family")
    args = parser.parse_args()

    _tiktoken_offline()
    t0 = time.perf_counter()
    natural = corpus.build_corpus(args.per_family)
    chunks = natural + families.build(args.per_extra)
    _log(f"corpus: {len(chunks)} chunks in {time.perf_counter() - t0:.0f}s")
    encs = {name: tiktoken.get_encoding(name) for name in ENCODINGS}
    truth = {name: [len(e.encode_ordinary(c.text)) for c in chunks] for name, e in encs.items()}
    _log(f"tiktoken counts done at {time.perf_counter() - t0:.0f}s")
    if args.fit:  # on the natural corpus alone
        refit(natural, {e: t[: len(natural)] for e, t in truth.items()}, encs)
    elif args.tables:
        write_tables(natural, encs)
        _log(f"wrote the tables of {fit.DATA_FILE} at {time.perf_counter() - t0:.0f}s")

    test_idx = [i for i, c in enumerate(chunks) if c.split == "test"]
    test = [chunks[i] for i in test_idx]
    estimate = _estimate.estimate_tokens
    baselines = {"len // 4": lambda t: len(t) // 4, "UTF-8 bytes": lambda t: len(t.encode())}
    every = (*corpus.FAMILIES, *families.FAMILIES)
    kinds = ", ".join(f"{f} ({o})" for f, o in families.ORIGIN.items())
    out = [
        f"Held-out chunks of 100-4,000 characters ({len(test)} in all), measured by "
        "`make bench-estimator`. Each cell: median |error| / 99th-percentile under-count / "
        "worst under-count of a chunk of 200 characters or more (bold where the median or the "
        "99th percentile exceeds 10% or the worst 25%). The first ten families are real text "
        "(emoji chat is synthetic) held out by origin: whole packages, gettext domains (in "
        "every language), files (tools/estimator/origin.py); the column `held out` gives the "
        "origins measured / all origins of the family, the others only were fitted on (emoji "
        "chat: sentences of held-out gettext domains). Nothing was fitted on the other "
        f"families: {kinds}.",
        "",
    ]
    held = held_out_column(chunks)
    for enc in ENCODINGS:
        methods = {
            "estimate": estimate,
            f"estimate:{enc}": lambda t, e=enc: estimate(t, e),  # type: ignore[misc]
            **baselines,
        }
        truths = [truth[enc][i] for i in test_idx]
        table, _ = report.accuracy_table(test, truths, methods, enc, every, held)
        out += [table, ""]
    speed_methods = {
        "estimate": estimate,
        "estimate:o200k_base": lambda text: _estimate.estimate_tokens(text, "o200k_base"),
        "tiktoken cl100k_base": encs["cl100k_base"].encode_ordinary,
        "tiktoken o200k_base": encs["o200k_base"].encode_ordinary,
        **baselines,
    }
    out += [
        "Speed, millions of characters per second (one call per chunk, best of 5 rounds taken "
        "in turns, the estimate's word caches emptied before each round, this machine), and the "
        "estimate's speed over tiktoken's in the same run:",
        "",
        report.speed_table(
            test,
            speed_methods,
            [
                ("estimate", "tiktoken o200k_base"),
                ("estimate", "tiktoken cl100k_base"),
                ("estimate:o200k_base", "tiktoken o200k_base"),
            ],
            every,
            reset=_estimate.clear_caches,
        ),
    ]
    tables = "\n".join(out)
    print(tables)
    if args.docs:
        update_docs(tables)
    if args.sample:
        write_sample(test)
    _log(f"done in {time.perf_counter() - t0:.0f}s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
