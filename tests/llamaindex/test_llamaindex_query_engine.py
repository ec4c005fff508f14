"""A real query engine: VectorStoreIndex over embedded Chroma, MockLLM echoing its prompt.

MockLLM answers with the prompt it was given, so the response text is exactly what an LLM
would have been sent: the context section can be checked against the budget.
"""

from __future__ import annotations

import chromadb
import pytest
from li_parts import (
    PROSE_MODULES,
    BudgetEvents,
    WordsEmbedding,
    llm_tokens,
    module_docstring,
    stdlib_documents,
)
from llama_index.core import StorageContext, VectorStoreIndex
from llama_index.core.llms import MockLLM
from llama_index.core.node_parser import TokenTextSplitter
from llama_index.core.query_engine import BaseQueryEngine
from llama_index.core.schema import MetadataMode, NodeWithScore
from llama_index.postprocessor.ragbudget import TokenBudgetPostprocessor
from llama_index.vector_stores.chroma import ChromaVectorStore
from ragbudget import TokenCounter

QUERY = "How does a heap queue keep the smallest item first, and how do tournaments sort?"
TOP_K = 8
RULE = "---------------------"


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> VectorStoreIndex:
    """The stdlib prose in an embedded, on-disk Chroma collection, each document carrying a
    'summary' of another module in its metadata (what the LLM sees, ahead of the text)."""
    client = chromadb.PersistentClient(path=str(tmp_path_factory.mktemp("chroma")))
    collection = client.get_or_create_collection("ragbudget-llamaindex")
    docs = stdlib_documents()
    for i, doc in enumerate(docs):
        doc.metadata["summary"] = module_docstring(PROSE_MODULES[(i + 1) % len(PROSE_MODULES)])[
            :400
        ]
    storage = StorageContext.from_defaults(
        vector_store=ChromaVectorStore(chroma_collection=collection)
    )
    # TokenTextSplitter, not the default SentenceSplitter: the latter loads NLTK data, and
    # nltk 3.10's path guard refuses the hard-linked files a uv install leaves in .venv.
    return VectorStoreIndex.from_documents(
        docs,
        storage_context=storage,
        embed_model=WordsEmbedding(),
        transformations=[TokenTextSplitter(chunk_size=400, chunk_overlap=0)],
    )


@pytest.fixture(scope="module")
def retrieved(index: VectorStoreIndex) -> list[NodeWithScore]:
    nodes = index.as_retriever(similarity_top_k=TOP_K).retrieve(QUERY)
    assert len(nodes) == TOP_K
    scores = [n.score for n in nodes]
    assert scores == sorted(scores, reverse=True)  # type: ignore[type-var]
    assert len(set(scores)) == len(scores)  # real, distinct similarities
    return nodes


def engine(index: VectorStoreIndex, budget: TokenBudgetPostprocessor) -> BaseQueryEngine:
    return index.as_query_engine(
        llm=MockLLM(), similarity_top_k=TOP_K, node_postprocessors=[budget]
    )


def context_sent(response: object) -> str:
    """The context section of the prompt MockLLM echoed back."""
    prompt = str(response)
    assert prompt.count(RULE) == 2, prompt[:500]
    return prompt.split(RULE)[1].strip("\n")


def check_prompt(
    response: object, kept: list[NodeWithScore], counter: TokenCounter, budget: int
) -> None:
    contents = [n.node.get_content(metadata_mode=MetadataMode.LLM) for n in kept]
    assert context_sent(response) == "\n\n".join(contents)
    assert sum(counter.count(c) for c in contents) <= budget
    assert "ragbudget" not in str(response)  # the tag never reaches the model


def test_chroma_query_engine_sends_the_best_nodes_within_budget(
    index: VectorStoreIndex,
    retrieved: list[NodeWithScore],
    cl100k: TokenCounter,
    budget_events: BudgetEvents,
) -> None:
    counts = [llm_tokens(cl100k, n) for n in retrieved]
    budget = counts[0] + counts[1] + counts[2] // 2  # room for two, not three
    response = engine(index, TokenBudgetPostprocessor(max_tokens=budget, counter=cl100k)).query(
        QUERY
    )

    kept = response.source_nodes
    assert [n.node.node_id for n in kept] == [n.node.node_id for n in retrieved[:2]]
    assert [n.node.metadata["ragbudget"] for n in kept] == [
        {"tokens": counts[0], "rank": 0, "cut": False},
        {"tokens": counts[1], "rank": 1, "cut": False},
    ]
    check_prompt(response, kept, cl100k, budget)
    for n in retrieved[2:]:
        assert n.node.get_content(metadata_mode=MetadataMode.LLM) not in str(response)

    (event,) = budget_events.events
    assert event.query_str == QUERY
    assert event.info.dropped_ids == [n.node.node_id for n in retrieved[2:]]
    assert event.info.used_tokens == counts[0] + counts[1]
    assert event.info.next_offset is None  # a query engine cannot page: no continuation


def test_chroma_query_engine_cuts_a_lone_oversized_top_node(
    index: VectorStoreIndex,
    retrieved: list[NodeWithScore],
    cl100k: TokenCounter,
    budget_events: BudgetEvents,
) -> None:
    top = llm_tokens(cl100k, retrieved[0])
    budget = top * 2 // 3
    response = engine(index, TokenBudgetPostprocessor(max_tokens=budget, counter=cl100k)).query(
        QUERY
    )

    (kept,) = response.source_nodes
    assert kept.node.node_id == retrieved[0].node.node_id
    assert kept.node.metadata["ragbudget"]["cut"] is True
    check_prompt(response, [kept], cl100k, budget)
    assert "[... cut to fit a " in context_sent(response)
    # the metadata header reached the LLM whole; only the text was cut
    header = retrieved[0].node.get_metadata_str(MetadataMode.LLM)
    assert context_sent(response).startswith(header)
    (event,) = budget_events.events
    assert event.info.cut_ids == [kept.node.node_id]


def test_metadata_heavy_nodes_are_counted_as_the_llm_sees_them(
    index: VectorStoreIndex, retrieved: list[NodeWithScore], cl100k: TokenCounter
) -> None:
    text_counts = [cl100k.count(n.node.get_content(MetadataMode.NONE)) for n in retrieved]
    llm_counts = [llm_tokens(cl100k, n) for n in retrieved]
    assert all(llm > text + 50 for llm, text in zip(llm_counts, text_counts, strict=True))
    budget = sum(text_counts[:4])  # four bare texts fit; four as the LLM sees them do not

    bare = TokenBudgetPostprocessor(
        max_tokens=budget, counter=cl100k, metadata_mode=MetadataMode.NONE
    )
    assert len(engine(index, bare).query(QUERY).source_nodes) >= 4

    response = engine(index, TokenBudgetPostprocessor(max_tokens=budget, counter=cl100k)).query(
        QUERY
    )
    kept = response.source_nodes
    assert len(kept) < 4
    check_prompt(response, kept, cl100k, budget)


async def test_chroma_query_engine_async(
    index: VectorStoreIndex,
    retrieved: list[NodeWithScore],
    cl100k: TokenCounter,
    budget_events: BudgetEvents,
) -> None:
    counts = [llm_tokens(cl100k, n) for n in retrieved]
    budget = sum(counts[:3])
    response = await engine(
        index, TokenBudgetPostprocessor(max_tokens=budget, counter=cl100k)
    ).aquery(QUERY)
    assert [n.node.node_id for n in response.source_nodes] == [
        n.node.node_id for n in retrieved[:3]
    ]
    check_prompt(response, response.source_nodes, cl100k, budget)
    assert budget_events.via == ["async"]
    assert budget_events.events[0].info.dropped_ids == [n.node.node_id for n in retrieved[3:]]


def test_the_store_still_holds_every_node_untouched(
    index: VectorStoreIndex, retrieved: list[NodeWithScore], cl100k: TokenCounter
) -> None:
    budget = llm_tokens(cl100k, retrieved[0]) // 2
    engine(index, TokenBudgetPostprocessor(max_tokens=budget, counter=cl100k)).query(QUERY)
    again = index.as_retriever(similarity_top_k=TOP_K).retrieve(QUERY)
    assert [n.model_dump() for n in again] == [n.model_dump() for n in retrieved]
