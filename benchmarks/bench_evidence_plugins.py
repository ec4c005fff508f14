"""The plugins' evidence options, off and on: does the answer's file reach the model?

The same store, questions and budgets as `bench_evidence.py` (imported from it): for each
question the store ranks 50 chunks once; each ranked chunk then becomes what each framework
hands its budget step, with the positions its own splitter would write:

- LangChain: a `Document` with `metadata={"source", "start_index", "score"}` (what
  `RecursiveCharacterTextSplitter(add_start_index=True)` and the "add scores" recipe write),
  budgeted by `TokenBudgetCompressor.compress_documents(docs, query)`, each Document counted
  as a stuff chain's `document_prompt` "{source}\\n{page_content}" renders it.
- LlamaIndex: a `NodeWithScore` holding a `TextNode` with `start_char_idx`/`end_char_idx`,
  the SOURCE relationship to its file and `metadata={"file_path"}` (what `SentenceSplitter`
  and a file reader set), budgeted by `TokenBudgetPostprocessor.postprocess_nodes(nodes,
  query_str=query)`, each node counted as the LLM sees it (metadata header included).

Reported at 500, 1,000, 2,000 and 4,000 tokens (the store's counter): the share of questions
whose answer file is among the returned Documents/nodes ("hit"), and the distinct files.

Run: uv run --all-packages --frozen python benchmarks/bench_evidence_plugins.py
"""

from __future__ import annotations

import logging
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

sys.path.insert(0, str(Path(__file__).parent))
import doc_figures
from _corpus import offline_tiktoken
from bench_evidence import BUDGETS, QUESTIONS, Record, answer_files, ranked_records

if TYPE_CHECKING:  # the frameworks load in the runs: the docs test imports this script
    from langchain_core.documents import Document
    from llama_index.core.schema import NodeWithScore

Run = Callable[[list[Record], str, int], set[str]]
"""What a plugin shows of the ranked records for a query at a budget: the files."""

OPTIONS: dict[str, dict[str, Any]] = {
    "off (default)": {},
    "merge+dedupe": {"merge_adjacent": True, "dedupe": True},
    "snippets": {"snippets": True},
    "merge+dedupe+snippets": {"merge_adjacent": True, "dedupe": True, "snippets": True},
    "  + cap 2/file": {"merge_adjacent": True, "dedupe": True, "snippets": True,
                       "max_per_source": 2},
    "  + mmr 0.7": {"merge_adjacent": True, "dedupe": True, "snippets": True, "mmr": 0.7},
}  # fmt: skip
"""The options compared, the same for both plugins."""


def documents(records: list[Record]) -> list[Document]:
    from langchain_core.documents import Document

    return [
        Document(id=i, page_content=text,
                 metadata={"source": m["source"], "start_index": m["start_index"], "score": s})
        for i, text, m, s in records
    ]  # fmt: skip


def nodes(records: list[Record]) -> list[NodeWithScore]:
    from llama_index.core.schema import NodeRelationship, NodeWithScore, RelatedNodeInfo, TextNode

    out = []
    for i, text, m, s in records:
        start = m["start_index"]
        node = TextNode(id_=i, text=text, start_char_idx=start, end_char_idx=start + len(text),
                        metadata={"file_path": m["source"]})  # fmt: skip
        node.relationships[NodeRelationship.SOURCE] = RelatedNodeInfo(node_id=m["source"])
        out.append(NodeWithScore(node=node, score=s))
    return out


def langchain(counter: Any, options: dict[str, Any]) -> Run:
    from langchain_core.prompts import PromptTemplate
    from langchain_ragbudget import TokenBudgetCompressor

    prompt = PromptTemplate.from_template("{source}\n{page_content}")

    def run(records: list[Record], query: str, budget: int) -> set[str]:
        budgeted = TokenBudgetCompressor(max_tokens=budget, counter=counter,
                                         document_formatter=prompt, **options)  # fmt: skip
        docs = budgeted.compress_documents(documents(records), query)
        return {d.metadata["source"] for d in docs}

    return run


def llamaindex(counter: Any, options: dict[str, Any]) -> Run:
    from llama_index.postprocessor.ragbudget import TokenBudgetPostprocessor

    def run(records: list[Record], query: str, budget: int) -> set[str]:
        pp = TokenBudgetPostprocessor(max_tokens=budget, counter=counter, **options)
        kept = pp.postprocess_nodes(nodes(records), query_str=query)
        return {n.node.metadata["file_path"] for n in kept}

    return run


def main() -> None:
    offline_tiktoken()
    logging.getLogger("ragbudget").setLevel(logging.ERROR)
    begin = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="ragbudget-bench-") as tmp:
        store, ranked = ranked_records(Path(tmp))
        tc = store.counter
    answers = answer_files()
    plugins = {"LangChain": langchain, "LlamaIndex": llamaindex}
    results: dict[str, Any] = {"questions": len(QUESTIONS), "budgets": list(BUDGETS),
                               "counter": tc.name, "plugins": {}}  # fmt: skip
    for plugin, make in plugins.items():
        print(f"\n{plugin:<24}" + "".join(f"{b:>8,} tok" for b in BUDGETS)
              + "   (hit %, distinct files)")  # fmt: skip
        for label, options in OPTIONS.items():
            run = make(tc, options)
            cells = []
            for b in BUDGETS:
                hits, distinct = 0, 0
                for qi, (q, _) in enumerate(QUESTIONS):
                    sources = run(ranked[qi], q, b)
                    hits += bool(answers[qi] & sources)
                    distinct += len(sources)
                n = len(QUESTIONS)
                cells.append(f"{100 * hits / n:>5.0f}% {distinct / n:>4.1f}")
                results["plugins"].setdefault(plugin, {}).setdefault(label.strip(), []).append(
                    {"hits": hits, "distinct": distinct / n}
                )
            print(f"{label:<24}" + "".join(f"{c:>12}" for c in cells), flush=True)
    print(f"\n({time.perf_counter() - begin:.0f} s)")
    doc_figures.save(__file__, results)


LABELS = {
    "off (default)": "none (the default)",
    "merge+dedupe": "`merge_adjacent`, `dedupe`",
    "snippets": "`snippets`",
    "merge+dedupe+snippets": "`merge_adjacent`, `dedupe`, `snippets`",
    "+ cap 2/file": "the three, `max_per_source=2`",
    "+ mmr 0.7": "the three, `mmr=0.7`",
}


def _table(results: dict[str, Any], plugin: str) -> str:
    n = results["questions"]
    rows = [[LABELS.get(key, key), *(f"{100 * c['hits'] / n:.0f}%, {c['distinct']:.1f}"
                                     for c in cells)]
            for key, cells in results["plugins"][plugin].items()]  # fmt: skip
    return doc_figures.grid(["options", *(f"{b:,} tokens" for b in results["budgets"])], rows)


def table_langchain(results: dict[str, Any]) -> str:
    """docs/langchain.md's table: TokenBudgetCompressor's evidence options, off and on."""
    return _table(results, "LangChain")


def table_llamaindex(results: dict[str, Any]) -> str:
    """docs/llamaindex.md's table: TokenBudgetPostprocessor's evidence options, off and on."""
    return _table(results, "LlamaIndex")


if __name__ == "__main__":
    main()
