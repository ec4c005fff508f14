"""Each package's public names import and match its __all__."""

from __future__ import annotations

import importlib

import pytest


@pytest.mark.parametrize(
    "module",
    [
        "ragbudget",
        "ragbudget.store",
        "ragbudget.mcp",
        "langchain_ragbudget",
        "llama_index.postprocessor.ragbudget",
    ],
)
def test_all_names_exist(module: str) -> None:
    mod = importlib.import_module(module)
    names = getattr(mod, "__all__", [])
    for name in names:
        assert hasattr(mod, name), f"{module}.__all__ names {name}, which is missing"
    assert len(names) == len(set(names))


PINNED = {
    "ragbudget": [
        "BudgetResult", "CUT_MARKER", "CallableCounter", "CharsCounter", "Chunk", "CounterSpec",
        "EstimateCounter", "Fitted", "HFCounter", "Order", "Oversize", "RagbudgetError",
        "Strategy", "TextChunk", "TextTruncation", "TiktokenCounter", "TokenCounter",
        "TruncationInfo", "chunk_text", "count_many", "cut_text", "cut_to_tokens", "fit",
        "get_counter", "largest_prefix", "least_budget", "rank_chunks", "truncate_head",
        "truncate_tail", "use_bundled_tiktoken_files",
    ],
    "ragbudget.store": [
        "DEFAULT_PATH", "DocumentStore", "FileProblem", "HashingEmbedding", "IngestReport",
        "ReadResponse", "SearchResponse", "SearchResult", "StoreError", "StoreStats",
    ],
    "ragbudget.mcp": [
        "BearerTokenVerifier", "BudgetExceededError", "DEFAULT_MAX_TOKENS_CEILING",
        "ServerSettings", "ServerStats", "TokenBudgetMiddleware", "clamp_budget", "create_server",
        "open_store",
    ],
    "langchain_ragbudget": [
        "SCORE_KEYS", "TRUNCATION_EVENT", "TokenBudgetCompressor", "TokenBudgetRetriever",
        "TruncationInfo",
    ],
    "llama_index.postprocessor.ragbudget": ["TokenBudgetEvent", "TokenBudgetPostprocessor"],
}  # fmt: skip


@pytest.mark.parametrize("module", sorted(PINNED))
def test_all_is_pinned(module: str) -> None:
    """A public name added or removed is a decision: this list changes with it."""
    assert sorted(importlib.import_module(module).__all__) == sorted(PINNED[module])


def test_errors_share_one_base() -> None:
    from ragbudget import RagbudgetError
    from ragbudget.mcp import BudgetExceededError
    from ragbudget.store import StoreError

    for error in (StoreError, BudgetExceededError):
        assert issubclass(error, RagbudgetError)
        assert issubclass(error, ValueError)  # what callers relied on before the base existed


def test_core_api_contract() -> None:
    import ragbudget

    for name in ("Chunk", "TokenCounter", "get_counter", "fit", "TruncationInfo", "BudgetResult",
                 "truncate_head", "truncate_tail"):  # fmt: skip
        assert name in ragbudget.__all__


def test_mcp_exports_the_middleware() -> None:
    pytest.importorskip("fastmcp")
    import ragbudget.mcp
    from fastmcp.server.middleware import Middleware

    assert "TokenBudgetMiddleware" in ragbudget.mcp.__all__
    assert issubclass(ragbudget.mcp.TokenBudgetMiddleware, Middleware)
