"""What both agent-budget suites (LangChain's middleware, LlamaIndex's tools) feed their tools
and measure with: one 768 KB log, 5,000 rows, the budget, the real tokenizers, the notice's
continuation call."""

from __future__ import annotations

import re

from ragbudget import get_counter

BUDGET = 8_000
REAL = (get_counter("tiktoken:o200k_base"), get_counter("tiktoken:cl100k_base"))
NEXT = re.compile(r'read_more\(handle="([^"]+)"\)')

LOG = "".join(
    f"2024-01-01T00:00:{i % 60:02d} INFO worker-{i % 7} handled request {i} in {i % 97} ms\n"
    for i in range(12_000)
)  # 768 KB of log lines
ROWS = [
    {"id": i, "user": f"user{i}", "email": f"user{i}@example.com", "score": i % 101}
    for i in range(5_000)
]
