"""More evidence per token: does the answer's file reach the model within the budget?

One store (embedded Chroma, the offline default embedding) built once over the stdlib's email,
json, asyncio, logging and http packages. For each of the questions below (written in plain
words, avoiding the code's identifiers, each with the files that answer it) the store ranks
its chunks; each strategy then turns the same ranked candidates into what a model reads, within
the budget by the store's counter. Reported at 500, 1,000, 2,000 and 4,000 tokens: the share of
questions whose answer file is among the results ("hit"), and the distinct sources shown.

- top-k prefix: ragbudget's `fit(strategy="stop")` on the ranked chunks (what ragbudget did
  before issue 19; LangChain's legacy tail-drop and Kernel Memory do the same), each chunk
  under a one-line header.
- equal cuts: LlamaIndex's `PromptHelper` way: the top 10 chunks, each cut to an equal share
  of the budget (`budget / 10` tokens, header included).
- store before / store now: `DocumentStore.search(q, max_tokens=B, limit=50)` as before
  issue 19 (`evidence=False`: the plain ranked prefix) and as now by default (`evidence=True`:
  merged spans, no near-duplicates, best-matching lines in fair shares, pages that partition
  the ranking); "+ cap 2/file" adds `max_per_source=2`.
- select(): `ragbudget.evidence.select` with its defaults on the same ranked chunks, each under
  a one-line header (what the plugins and any caller of the core get).

Run: uv run --all-packages --frozen python benchmarks/bench_evidence.py [--ablation]
(`--ablation` adds `select()` with one option changed at a time: a few minutes more.)
"""

from __future__ import annotations

import logging
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
import doc_figures
from _corpus import STDLIB, offline_tiktoken
from ragbudget import Chunk, fit
from ragbudget.counters import TokenCounter
from ragbudget.fitting import cut_text
from ragbudget_server.store import DocumentStore

PACKAGES = ("email", "json", "asyncio", "logging", "http")
BUDGETS = (500, 1000, 2000, 4000)
CANDIDATES = 50
EQUAL_K = 10

# (question, files that answer it, relative to the stdlib)
QUESTIONS: list[tuple[str, tuple[str, ...]]] = [
    ("turn text holding an object literal back into dictionaries and lists",
     ("json/decoder.py", "json/__init__.py", "json/scanner.py")),
    ("escape characters outside ASCII when writing serialised output",
     ("json/encoder.py",)),
    ("pretty print a serialised document from the command line", ("json/tool.py",)),
    ("fold a header value that is too long over several lines",
     ("email/_header_value_parser.py", "email/header.py", "email/policy.py",
      "email/_policybase.py")),
    ("encode binary attachments as base64 text for mail",
     ("email/base64mime.py", "email/encoders.py")),
    ("encode text so only printable characters remain, with equals signs as escapes",
     ("email/quoprimime.py", "email/encoders.py")),
    ("split a list of recipient addresses with display names apart",
     ("email/utils.py", "email/_parseaddr.py", "email/headerregistry.py",
      "email/_header_value_parser.py")),
    ("format the current time the way mail servers expect dates",
     ("email/utils.py", "email/_parseaddr.py")),
    ("walk over every part of a message made of several parts",
     ("email/iterators.py", "email/message.py")),
    ("write a message object back out as bytes for sending", ("email/generator.py",)),
    ("feed incoming data in pieces and build the message incrementally",
     ("email/feedparser.py", "email/parser.py")),
    ("which character set and body encoding to use for a given language",
     ("email/charset.py",)),
    ("problems recorded when an incoming message is malformed",
     ("email/errors.py", "email/_header_value_parser.py", "email/feedparser.py")),
    ("the type of content of a message and its parameters such as the boundary",
     ("email/message.py", "email/headerregistry.py", "email/_header_value_parser.py")),
    ("wait for several coroutines at once and collect all their results",
     ("asyncio/tasks.py",)),
    ("limit how many workers may use a resource at the same time", ("asyncio/locks.py",)),
    ("a first-in first-out buffer shared by producer and consumer coroutines",
     ("asyncio/queues.py",)),
    ("start a child process and read what it prints without blocking",
     ("asyncio/subprocess.py", "asyncio/base_subprocess.py", "asyncio/unix_events.py")),
    ("open a network connection and get a reader and a writer", ("asyncio/streams.py",)),
    ("give up on an operation that takes longer than some seconds",
     ("asyncio/timeouts.py", "asyncio/tasks.py")),
    ("wrap a connection in an encrypted secure layer",
     ("asyncio/sslproto.py", "asyncio/base_events.py")),
    ("run a callback later after a delay", ("asyncio/base_events.py", "asyncio/events.py")),
    ("run a blocking function in a thread so the loop stays responsive",
     ("asyncio/threads.py", "asyncio/base_events.py")),
    ("a placeholder for a result that becomes available later", ("asyncio/futures.py",)),
    ("react to an interrupt sent by the operating system while the loop runs",
     ("asyncio/unix_events.py", "asyncio/runners.py")),
    ("overlapped input and output on Windows with completion ports",
     ("asyncio/windows_events.py", "asyncio/proactor_events.py")),
    ("write the log to a file that is replaced once it grows past a size",
     ("logging/handlers.py",)),
    ("set up loggers from a dictionary of settings", ("logging/config.py",)),
    ("send log records over the network to a remote machine", ("logging/handlers.py",)),
    ("control how each log line's time and message are laid out", ("logging/__init__.py",)),
    ("keep records in memory and write them out when a severe one arrives",
     ("logging/handlers.py",)),
    ("keep cookies from servers between sessions in a file", ("http/cookiejar.py",)),
    ("parse a cookie header into names and values", ("http/cookies.py",)),
    ("the numbers a web server answers with and their descriptive phrases",
     ("http/__init__.py",)),
    ("serve the files of the current folder over the web", ("http/server.py",)),
    ("send a request to a web server and read the body of its answer", ("http/client.py",)),
    ("read an answer whose body arrives in pieces of announced length", ("http/client.py",)),
    ("run scripts through the common gateway interface from a small web server",
     ("http/server.py",)),
]  # fmt: skip

ABLATION: dict[str, dict[str, Any]] = {
    "  merge off": {"merge": False},
    "  dedupe off": {"dedupe_threshold": None},
    "  snippets off": {"snippets": False},
    "  min_share 50": {"min_share": 50},
    "  min_share 200": {"min_share": 200},
    "  cap 1/file": {"max_per_source": 1},
    "  cap 2/file": {"max_per_source": 2},
    "  mmr 0.7": {"mmr": 0.7},
}
"""`select()` with one option changed (`--ablation`)."""

Pieces = list[tuple[str, str]]
"""(source, text shown) per result."""


def _render(pieces: Pieces) -> str:
    return "\n\n".join(f"[{i}] {s}\n{t}" for i, (s, t) in enumerate(pieces, start=1))


def _as_chunks(ranked: list[Record]) -> list[Chunk]:
    return [Chunk(id=i, text=d, score=s, metadata=m) for i, d, m, s in ranked]


def top_k_prefix(chunks: list[Chunk], budget: int, tc: TokenCounter, query: str) -> Pieces:
    headed = [c.model_copy(update={"text": f"[{n}] {c.metadata['source']}\n{c.text}"})
              for n, c in enumerate(chunks, start=1)]  # fmt: skip
    kept = fit(headed, budget, counter=tc, strategy="stop", separator="\n\n").chunks
    return [(c.metadata["source"], c.text.split("\n", 1)[1]) for c in kept]


def equal_cuts(chunks: list[Chunk], budget: int, tc: TokenCounter, query: str) -> Pieces:
    share = budget // EQUAL_K - 1  # the joins between results
    out: Pieces = []
    for n, c in enumerate(chunks[:EQUAL_K], start=1):
        head = f"[{n}] {c.metadata['source']}\n"
        cut = cut_text(c.text, share, tc, render=lambda t, h=head: h + t)  # type: ignore[misc]
        if cut is not None:
            out.append((c.metadata["source"], c.text[: cut.size]))
    return out


PAYLOAD: dict[tuple[str, int], list[float]] = {}
"""(strategy, budget) -> each answer's share of tokens that is the results' own text."""


def store_search(store: DocumentStore, name: str, **options: Any) -> Callable[[str, int], Pieces]:
    def run(query: str, budget: int) -> Pieces:
        resp = store.search(query, max_tokens=budget, limit=CANDIDATES, **options)
        texts = sum(store.counter.count(r.text) for r in resp.results)
        PAYLOAD.setdefault((name, budget), []).append(texts / max(resp.used_tokens, 1))
        return [(r.source, r.text) for r in resp.results]

    return run


STORE: dict[str, int] = {}
"""The benchmark store's files and chunks, once built."""

Record = tuple[str, str, dict[str, Any], float]
"""A ranked candidate: id, text, metadata, score."""


def ranked_records(tmp: Path) -> tuple[DocumentStore, list[list[Record]]]:
    """The benchmark's store (built in `tmp`, its summary printed) and, for each question, its
    `CANDIDATES` best records in rank order, as the store's own ranking gives them."""
    store = DocumentStore(path=tmp / "db")
    report = store.ingest([STDLIB / p for p in PACKAGES])
    STORE.update(files=report.files_ingested, chunks=report.chunks_added)
    print(f"store: the stdlib's {', '.join(PACKAGES)}: {report.files_ingested} files, "
          f"{report.chunks_added} chunks; counter {store.counter.name}; {len(QUESTIONS)} "
          f"questions; {CANDIDATES} ranked candidates each")  # fmt: skip
    collection = store.collection
    ranked: list[list[Record]] = []
    for q, _ in QUESTIONS:
        pairs = store._ranked(collection, q, CANDIDATES, None)
        records = store._records(collection, [i for i, _ in pairs])
        ranked.append([(i, *records[i], round(1 - d, 4)) for i, d in pairs])
    return store, ranked


def answer_files() -> list[set[str]]:
    """For each question, the full paths of the files that answer it."""
    prefix = STDLIB.as_posix().rstrip("/") + "/"
    return [{prefix + f for f in files} for _, files in QUESTIONS]


def main() -> None:
    offline_tiktoken()
    logging.getLogger("ragbudget").setLevel(logging.ERROR)
    begin = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="ragbudget-bench-") as tmp:
        store, candidates = ranked_records(Path(tmp))
        tc = store.counter
        ranked = [_as_chunks(records) for records in candidates]
        answers = answer_files()
        ceiling = sum(bool(a & {c.metadata["source"] for c in r}) for a, r in
                      zip(answers, ranked, strict=True))  # fmt: skip
        print(f"answer file among the {CANDIDATES} candidates: {ceiling}/{len(QUESTIONS)}")
        cells_of: dict[str, list[dict[str, float]]] = {}

        strategies: dict[str, Callable[[int, int], Pieces]] = {
            "top-k prefix": lambda qi, b: top_k_prefix(ranked[qi], b, tc, QUESTIONS[qi][0]),
            "equal cuts": lambda qi, b: equal_cuts(ranked[qi], b, tc, QUESTIONS[qi][0]),
        }
        searches: dict[str, dict[str, Any]] = {
            "store before": {"evidence": False},
            "store now": {"evidence": True},
            "  + cap 2/file": {"evidence": True, "max_per_source": 2},
        }
        for name, options in searches.items():
            run = store_search(store, name, **options)
            strategies[name] = lambda qi, b, run=run: run(QUESTIONS[qi][0], b)
        try:
            from ragbudget.evidence import select
        except ImportError:
            pass
        else:

            def evidence(qi: int, b: int) -> Pieces:
                chunks, q = ranked[qi], QUESTIONS[qi][0]
                got = select(chunks, b, counter=tc, query=q, header=_header)
                return [(c.metadata["source"], c.text) for c in got.chunks]

            strategies["select()"] = evidence
            if "--ablation" in sys.argv:  # one option changed at a time
                for label, change in ABLATION.items():

                    def variant(qi: int, b: int, change: dict[str, Any] = change) -> Pieces:
                        chunks, q = ranked[qi], QUESTIONS[qi][0]
                        got = select(chunks, b, counter=tc, query=q, header=_header, **change)
                        return [(c.metadata["source"], c.text) for c in got.chunks]

                    strategies[label] = variant

        print(f"\n{'strategy':<16}" + "".join(f"{b:>8,} tok" for b in BUDGETS)
              + "   (hit %, distinct sources)")  # fmt: skip
        for name, strategy in strategies.items():
            cells = []
            for b in BUDGETS:
                hits, distinct = 0, 0
                for qi in range(len(QUESTIONS)):
                    pieces = strategy(qi, b)
                    sources = {s for s, _ in pieces}
                    hits += bool(answers[qi] & sources)
                    distinct += len(sources)
                n = len(QUESTIONS)
                cells.append(f"{100 * hits / n:>5.0f}% {distinct / n:>4.1f}")
                cells_of.setdefault(name.strip(), []).append(
                    {"hits": hits, "distinct": distinct / n}
                )
            print(f"{name:<16}" + "".join(f"{c:>12}" for c in cells))
        print("\npayload: the results' own text / the whole answer's tokens (store's counter), "
              "median")  # fmt: skip
        for name in searches:
            cells = [f"{statistics.median(PAYLOAD[name, b]):>11.0%}" for b in BUDGETS]
            print(f"{name:<16}" + "".join(f"{c:>12}" for c in cells))
    seconds = time.perf_counter() - begin
    print(f"\n({seconds:.0f} s)")
    doc_figures.save(
        __file__,
        {
            **STORE, "packages": list(PACKAGES), "questions": len(QUESTIONS),
            "candidates": CANDIDATES, "ceiling": ceiling, "budgets": list(BUDGETS),
            "seconds": seconds, "strategies": cells_of,
            "payload": {name.strip(): [statistics.median(PAYLOAD[name, b]) for b in BUDGETS]
                        for name in searches},
        },
    )  # fmt: skip


LABELS = {
    "top-k prefix": "top-k prefix (`fit`)",
    "equal cuts": "equal cuts (LlamaIndex `PromptHelper`, top 10)",
    "store before": "store, plain prefix (`evidence=False`)",
    "store now": "**store** (the default, `evidence=True`)",
    "+ cap 2/file": "store, `max_per_source=2`",
    "select()": "`select()` defaults",
}
ABLATED = {label.strip(): f"`{next(iter(change))}={next(iter(change.values()))}`"
           for label, change in ABLATION.items()}  # fmt: skip


def _hits_table(results: dict[str, Any], first: str, names: dict[str, str]) -> str:
    n, cells = results["questions"], results["strategies"]
    rows = [[label, *(f"{100 * c['hits'] / n:.0f}%, {c['distinct']:.1f}" for c in cells[key])]
            for key, label in names.items() if key in cells]  # fmt: skip
    return doc_figures.grid([first, *(f"{b:,} tokens" for b in results["budgets"])], rows)


def table(results: dict[str, Any]) -> str:
    """docs/evidence.md's table: how often the answer's file reaches the model, by strategy."""
    return (
        f"The stdlib's {', '.join(results['packages'])} ({results['files']} files, "
        f"{results['chunks']:,} chunks), {results['questions']} questions, the answer's file among "
        f"the {results['candidates']} ranked candidates for {results['ceiling']}. Each cell: the "
        "share of questions whose answer file is among the results, and the distinct files "
        "shown, on average.\n\n"
        + _hits_table(results, "strategy", LABELS)
        + "\n\n"
        + _goal(results)
    )


def _goal(results: dict[str, Any]) -> str:
    """Whether the store's default and `select()` meet the goal, in this run."""
    s, at = results["strategies"], results["budgets"].index(1000)

    def met(key: str) -> bool:
        floor = [c["hits"] for c in s["store before"]]
        return s[key][at]["hits"] >= 0.75 * results["questions"] and all(
            c["hits"] >= f for c, f in zip(s[key], floor, strict=True)
        )

    who = {"store now": "the store's default", "select()": "`select()`"}
    verdicts = [f"{'met' if met(k) else '**not met**'} by {name}" for k, name in who.items()]
    return (
        "The goal, the answer's file for 75% of the questions at 1,000 tokens and never fewer "
        f"than the plain prefix at any budget: {' and '.join(verdicts)}."
    )


def table_payload(results: dict[str, Any]) -> str:
    """docs/evidence.md's table: the share of an answer's tokens that is the results' text."""
    names = {"store before": "plain prefix (`evidence=False`)", "store now": "the default",
             "+ cap 2/file": "the default, `max_per_source=2`"}  # fmt: skip
    rows = [[label, *(f"{v:.0%}" for v in results["payload"][key])] for key, label in names.items()]
    return doc_figures.grid(["store", *(f"{b:,} tokens" for b in results["budgets"])], rows)


def table_ablation(results: dict[str, Any]) -> str:
    """docs/evidence.md's table: `select()` with one option changed (the `--ablation` run)."""
    return _hits_table(results, "`select()` with", ABLATED)


def table_headline(results: dict[str, Any]) -> str:
    """The README's two rows: the store's default against a plain top-k prefix."""
    n, at = results["questions"], results["budgets"].index(1000)
    rows = {"store now": "the store's search (the default)", "top-k prefix": "a plain top-k prefix"}
    cells = [(label, f"{100 * results['strategies'][key][at]['hits'] / n:.0f}% of {n} questions")
             for key, label in rows.items()]  # fmt: skip
    return doc_figures.grid(
        ["at 1,000 tokens", "the answer's file reaches the model for"], cells, "lr"
    )


def _header(rank: int, chunk: Chunk) -> str:
    return f"[{rank}] {chunk.metadata['source']}"


if __name__ == "__main__":
    main()
