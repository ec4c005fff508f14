"""Keeps every tool output a LlamaIndex agent reads within a token budget; the rest in pages.

`budget_tools(tools)` (or `ToolBudget(...).wrap(tools)`) gives the tools back wrapped, with a
continuation tool, `read_more(handle)`: an output over the budget reaches the LLM as its first
page and a notice naming the call that reads on; the whole output is held in the workflow
Context's state, so later `read_more` calls in the run serve the next pages, each within the
same budget, until the last. docs/llamaindex-agents.md has the guide.

    from llama_index.core.agent.workflow import FunctionAgent
    from llama_index.tools.ragbudget import budget_tools

    agent = FunctionAgent(tools=budget_tools([grep], max_tokens=4_000), llm=llm)
"""

from llama_index.tools.ragbudget.base import (
    CONTEXT_PARAM,
    DEFAULT_CONTINUATION_TOOL,
    BudgetedTool,
    ContinuationTool,
    ToolBudget,
    ToolBudgetEvent,
    budget_tools,
)

from ragbudget.pages.reading import MIN_MAX_TOKENS

__all__ = [
    "CONTEXT_PARAM",
    "DEFAULT_CONTINUATION_TOOL",
    "MIN_MAX_TOKENS",
    "BudgetedTool",
    "ContinuationTool",
    "ToolBudget",
    "ToolBudgetEvent",
    "budget_tools",
]
__version__ = "0.1.0"
