"""langchain-ragbudget: keep retrieved documents within a token budget in LangChain.

- `TokenBudgetRetriever(base_retriever=..., max_tokens=...)`: a drop-in retriever wrapper.
- `TokenBudgetCompressor(max_tokens=...)`: the same budget as an LCEL step
  (`retriever | budget`) and a `BaseDocumentCompressor`.

Each call emits the custom event `TRUNCATION_EVENT` (`"ragbudget_truncation"`) carrying the
call's `TruncationInfo`.
"""

from ragbudget import TruncationInfo

from langchain_ragbudget._budget import SCORE_KEYS
from langchain_ragbudget._events import TRUNCATION_EVENT
from langchain_ragbudget.compressors import TokenBudgetCompressor
from langchain_ragbudget.retrievers import TokenBudgetRetriever

__all__ = [
    "SCORE_KEYS",
    "TRUNCATION_EVENT",
    "TokenBudgetCompressor",
    "TokenBudgetRetriever",
    "TruncationInfo",
]
__version__ = "0.1.0"
