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
