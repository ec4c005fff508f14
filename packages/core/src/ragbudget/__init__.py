"""ragbudget: fit retrieved context into an LLM's token budget.

The core: token counters (`get_counter`), the budget primitive (`largest_prefix`, `cut_text`:
the largest rendering that fits, measured), `fit()` for ranked chunks with truthful truncation
metadata, head/tail truncation of tool output with continuation notices, and token-aware
chunking for ingestion (`chunk_text`, with the `split` extra).
"""

from ragbudget._cut import cut_to_tokens
from ragbudget.budget import (
    CUT_MARKER,
    CutChunk,
    Order,
    Oversize,
    RenderChunk,
    Strategy,
    fit,
    rank_chunks,
    with_marker,
)
from ragbudget.chunking import TextChunk, chunk_text  # needs the `split` extra only when called
from ragbudget.counters import (
    CallableCounter,
    CharsCounter,
    CounterSpec,
    EstimateCounter,
    HFCounter,
    TiktokenCounter,
    TokenCounter,
    count_many,
    get_counter,
    use_bundled_tiktoken_files,
)
from ragbudget.errors import RagbudgetError
from ragbudget.fitting import Fitted, cut_text, largest_prefix, least_budget, stated_count
from ragbudget.limits import WalledCounter, Walls
from ragbudget.models import BudgetResult, Chunk, TruncationInfo
from ragbudget.parts import PartsCounter
from ragbudget.truncate import TextTruncation, truncate_head, truncate_tail

__all__ = [
    "CUT_MARKER",
    "BudgetResult",
    "CallableCounter",
    "CharsCounter",
    "Chunk",
    "CounterSpec",
    "CutChunk",
    "EstimateCounter",
    "Fitted",
    "HFCounter",
    "Order",
    "Oversize",
    "PartsCounter",
    "RagbudgetError",
    "RenderChunk",
    "Strategy",
    "TextChunk",
    "TextTruncation",
    "TiktokenCounter",
    "TokenCounter",
    "TruncationInfo",
    "WalledCounter",
    "Walls",
    "chunk_text",
    "count_many",
    "cut_text",
    "cut_to_tokens",
    "fit",
    "get_counter",
    "largest_prefix",
    "least_budget",
    "rank_chunks",
    "stated_count",
    "truncate_head",
    "truncate_tail",
    "use_bundled_tiktoken_files",
    "with_marker",
]
__version__ = "0.1.0"
