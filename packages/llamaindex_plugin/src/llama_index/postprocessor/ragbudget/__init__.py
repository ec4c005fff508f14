"""LlamaIndex node postprocessor that keeps retrieved nodes within a token budget.

`TokenBudgetPostprocessor` counts what the LLM will see (metadata included), keeps the
highest-score nodes that fit, drops the rest, cuts a lone oversized top node at a sentence
boundary, and reports each call as a `TokenBudgetEvent` through LlamaIndex instrumentation.
"""

from llama_index.postprocessor.ragbudget.base import TokenBudgetPostprocessor
from llama_index.postprocessor.ragbudget.events import TokenBudgetEvent

__all__ = ["TokenBudgetEvent", "TokenBudgetPostprocessor"]
__version__ = "0.1.0"
