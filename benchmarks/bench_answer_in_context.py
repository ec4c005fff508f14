"""Answer in context: is the passage that answers a question in the text the model reads?

A store (embedded Chroma, by default the offline hashing embedding) is built over the files of
one held-out set: about twenty stdlib modules and some of the stdlib's Chinese, Japanese and
Korean test texts. Set `a` (`data/answer_questions.json`, the default) is the one the evidence
weights were tuned on; set `b` (`data/answer_questions_b.json`) was written afterwards over
twenty other modules, to check that tuning on questions it never saw. Each holds questions in
plain words, each with its answering file and a verbatim passage of it (`_answer_set.py` scores
them). At 1,000 and 2,000 tokens, side by
side in one run and by the store's counter, each strategy turns a question into what a model
reads, and the table gives the share of questions whose passage is in it (whitespace aside,
under its own file), and the median share of the budget the answer spends:

- evidence: `DocumentStore.search(q, max_tokens=B)` at its defaults (hybrid ranking, evidence
  mode, limit 10).
- plain: the same with `evidence=False` (the ranked prefix of whole chunks).
- evidence, dense / plain, dense: the same two by vectors alone (`hybrid=False`).
- top-k prefix: `fit(strategy="stop")` over the store's 50 best-ranked chunks, each under a
  one-line header (what a plain top-k retriever with a token cap does).
- equal cuts: LlamaIndex's `PromptHelper` way: the 10 best chunks, each cut to `B / 10` tokens.
  (Both are `bench_evidence.py`'s.)

And the ranking itself: the share of questions whose answering file is ranked first among the
files of the 50 best chunks, their mean reciprocal rank, and how often a chunk holding the passage
is among those 50 (the most any strategy can show).

    uv run --all-packages --frozen python benchmarks/bench_answer_in_context.py [--set a|b]
        [--quick] [--embedding NAME_OR_MODEL_DIR] [--misses]

`--set`: which held-out set (`a` by default; `make bench` runs both). `--quick`: every third
question, over only the files they need (a smoke run). `--embedding`: any embedding the store
takes (`docs/store.md`); the ingest and search times are printed too. `--misses`: the questions
whose file the vectors do not rank first.
"""

from __future__ import annotations

import logging
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
import bench_evidence
import doc_figures
from _answer_set import (
    AnswerSet,
    Pieces,
    answered,
    file_rank,
    load,
    missing_passages,
    reciprocal_rank,
    set_path,
)
from _corpus import STDLIB, offline_tiktoken
from bench_evidence import _render
from ragbudget import Chunk
from ragbudget.counters import TokenCounter
from ragbudget_server.store import DocumentStore

BUDGETS = (1000, 2000)
CANDIDATES = 50

Strategy = Callable[[int, int], tuple[Pieces, int]]
"""(question index, budget) -> (pieces shown, tokens the whole answer counts)."""


def _option(name: str) -> str | None:
    if name in sys.argv:
        at = sys.argv.index(name)
        if at + 1 >= len(sys.argv):
            msg = f"{name} needs a value"
            raise SystemExit(msg)
        return sys.argv[at + 1]
    return None


def shown(
    strategy: Callable[..., Pieces],
) -> Callable[[list[Chunk], int, TokenCounter], tuple[Pieces, int]]:
    """`bench_evidence`'s strategy, with the tokens of the whole text it shows."""

    def run(chunks: list[Chunk], budget: int, tc: TokenCounter) -> tuple[Pieces, int]:
        pieces = strategy(chunks, budget, tc, "")
        return pieces, tc.count(_render(pieces))

    return run


top_k_prefix, equal_cuts = shown(bench_evidence.top_k_prefix), shown(bench_evidence.equal_cuts)


def ranked_chunks(store: DocumentStore, query: str, hybrid: bool = False) -> list[Chunk]:
    """The store's `CANDIDATES` best chunks for `query`, in its own rank order (`hybrid`: the
    fused dense and lexical ranking)."""
    ranked = store.candidates(query, limit=CANDIDATES, hybrid=hybrid)
    got = store.collection.get(ids=[i for i, *_ in ranked], include=["documents", "metadatas"])
    texts = dict(zip(got["ids"], got["documents"] or [], strict=True))
    return [Chunk(id=i, text=texts[i] or "", score=score, metadata={"source": source})
            for i, source, score, _ in ranked if i in texts]  # fmt: skip


def build(tmp: Path, answers: AnswerSet, embedding: str) -> tuple[DocumentStore, float, int]:
    """The store over the answer set's corpus: (store, ingest seconds, chunks)."""
    store = DocumentStore(path=tmp / "db", embedding=embedding)
    begin = time.perf_counter()
    report = store.ingest([STDLIB / c for c in answers.corpus])
    return store, time.perf_counter() - begin, report.chunks_added


def main() -> None:
    offline_tiktoken()
    logging.getLogger("ragbudget").setLevel(logging.ERROR)
    logging.getLogger("ragbudget_server").setLevel(logging.ERROR)
    name = set_name = _option("--set") or "a"
    try:
        answers = load(set_path(name))
    except ValueError as error:
        raise SystemExit(str(error)) from None
    if "--quick" in sys.argv:
        kept = answers.questions[::3]
        files = sorted({q.file for q in kept})
        answers = AnswerSet(corpus=files, questions=kept)
    embedding = _option("--embedding") or "hashing"
    if problems := missing_passages(answers, STDLIB):
        raise SystemExit("the answer set does not match this stdlib:\n" + "\n".join(problems))
    questions = answers.questions
    n = len(questions)
    begin = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="ragbudget-bench-") as tmp:
        store, ingest_s, chunks = build(Path(tmp), answers, embedding)
        tc = store.counter
        cjk = sum(not q.q.isascii() for q in questions)
        print(f"set {name}: {len(answers.corpus)} stdlib files, {chunks:,} chunks; embedding "
              f"{store.stats().embedding}, counter {tc.name}; {n} questions "
              f"({cjk} in Chinese, Japanese or Korean)")  # fmt: skip
        print(
            f"ingest: {ingest_s:.1f} s ({1000 * ingest_s / max(chunks, 1):.1f} s per 1,000 chunks)"
        )

        search_s: list[float] = []
        ranked: list[list[Chunk]] = []
        for item in questions:
            t0 = time.perf_counter()
            ranked.append(ranked_chunks(store, item.q))
            search_s.append(time.perf_counter() - t0)
        median_ms = 1000 * statistics.median(search_s)
        print(f"ranking {CANDIDATES} candidates: median {median_ms:.0f} ms per question "
              "(a first search of each query, no cached ranking)")  # fmt: skip

        def search(**options: Any) -> Strategy:
            def run(qi: int, budget: int) -> tuple[Pieces, int]:
                resp = store.search(questions[qi].q, max_tokens=budget, **options)
                return [(r.source, r.text) for r in resp.results], resp.used_tokens

            return run

        strategies: dict[str, Strategy] = {
            "evidence (default)": search(),
            "plain": search(evidence=False),
            "evidence, dense": search(hybrid=False),
            "plain, dense": search(evidence=False, hybrid=False),
            "top-k prefix": lambda qi, b: top_k_prefix(ranked[qi], b, tc),
            "equal cuts": lambda qi, b: equal_cuts(ranked[qi], b, tc),
        }
        header = "".join(f"{f'{b:,} tok':>22}" for b in BUDGETS)
        print(f"\n{'strategy':<20}{header}   (answer in context, of {n}; budget used, median)")
        results: dict[str, Any] = {
            "set": set_name, "embedding": store.stats().embedding, "files": len(answers.corpus),
            "chunks": chunks, "questions": n, "cjk": cjk, "ingest_s": ingest_s,
            "search_ms": median_ms, "budgets": list(BUDGETS), "candidates": CANDIDATES,
            "strategies": {}, "ranking": {},
        }  # fmt: skip
        for name, strategy in strategies.items():
            cells = []
            for b in BUDGETS:
                hits, used = 0, []
                for qi, item in enumerate(questions):
                    pieces, tokens = strategy(qi, b)
                    hits += answered(item, pieces, STDLIB)
                    used.append(tokens / b)
                results["strategies"].setdefault(name, []).append(
                    {"hits": hits, "used": statistics.median(used)}
                )
                cells.append(
                    f"{hits:>3}/{n} {100 * hits / n:>4.0f}% {100 * statistics.median(used):>4.0f}%"
                )
            print(f"{name:<20}" + "".join(f"{c:>22}" for c in cells))

        fused = [ranked_chunks(store, item.q, hybrid=True) for item in questions]
        for label, ranking in (("hybrid", fused), ("dense", ranked)):
            places = [file_rank(item, [c.metadata["source"] for c in r], STDLIB)
                      for item, r in zip(questions, ranking, strict=True)]  # fmt: skip
            print(
                f"{label}: answer's file ranked first {sum(r == 1 for r in places)}/{n}; "
                f"mean reciprocal rank {statistics.mean(map(reciprocal_rank, places)):.2f}"
            )
            results["ranking"][label] = {
                "first": sum(r == 1 for r in places),
                "mrr": statistics.mean(map(reciprocal_rank, places)),
                "passage_in_candidates": sum(
                    answered(item, [(c.metadata["source"], c.text) for c in r], STDLIB)
                    for item, r in zip(questions, ranking, strict=True)
                ),
            }
        ranks = [file_rank(item, [c.metadata["source"] for c in r], STDLIB)
                 for item, r in zip(questions, ranked, strict=True)]  # fmt: skip
        first = sum(r == 1 for r in ranks)
        mrr = statistics.mean(reciprocal_rank(r) for r in ranks)
        ceiling = sum(answered(item, [(c.metadata["source"], c.text) for c in r], STDLIB)
                      for item, r in zip(questions, ranked, strict=True))  # fmt: skip
        print(f"\nanswer's file ranked first: {first}/{n} ({100 * first / n:.0f}%); "
              f"mean reciprocal rank {mrr:.2f}; among the {CANDIDATES} candidates' files: "
              f"{sum(r is not None for r in ranks)}/{n}")  # fmt: skip
        print(f"a chunk holding the passage among the {CANDIDATES} candidates: {ceiling}/{n}")
        if "--misses" in sys.argv:
            for item, r in zip(questions, ranks, strict=True):
                if r != 1:
                    print(f"  file rank {r}: {item.q}  [{item.file}]")
        store.close()
    print(f"\n({time.perf_counter() - begin:.0f} s)")
    key = f"bench_answer_in_context.{set_name}"
    if embedding != "hashing":  # another embedding's run: a file of its own
        key += "_" + re.sub(r"\W+", "_", Path(embedding).name)
    doc_figures.save(__file__, results, key=key)


def table(results: dict[str, Any]) -> str:
    """docs/retrieval-quality.md's table for one held-out set: the answer in context, by
    strategy and budget, then the ranking's own figures."""
    n = results["questions"]
    labels = {"evidence (default)": "evidence, hybrid (default)", "plain": "plain, hybrid"}
    rows = []
    for name, cells in results["strategies"].items():
        used = sorted(c["used"] for c in cells)
        shown = [f"{c['hits']}/{n} ({c['hits'] / n:.0%})" for c in cells]
        rows.append([labels.get(name, name), *shown, f"{used[0]:.0%}-{used[-1]:.0%}"])
    head = ["strategy", *(f"{b:,} tokens" for b in results["budgets"]), "budget used"]
    hybrid, dense = results["ranking"]["hybrid"], results["ranking"]["dense"]
    return (
        f"Set {results['set']}: {n} questions ({results['cjk']} in Chinese, Japanese or Korean) "
        f"over {results['files']} files, {results['chunks']:,} chunks, embedding "
        f"`{results['embedding']}`.\n\n"
        + doc_figures.grid(head, rows)
        + f"\n\nThe answering file ranked first (among the distinct files of the "
        f"{results['candidates']} best chunks): hybrid {hybrid['first']}/{n} (mean reciprocal "
        f"rank {hybrid['mrr']:.2f}), vectors alone {dense['first']}/{n} ({dense['mrr']:.2f}). "
        f"A chunk holding the passage among the {results['candidates']} best: hybrid "
        f"{hybrid['passage_in_candidates']}/{n}, vectors alone "
        f"{dense['passage_in_candidates']}/{n}."
    )


if __name__ == "__main__":
    main()
