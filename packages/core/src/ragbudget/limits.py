"""The walls MCP clients put on a tool result, as budgets: what the middleware and the server
default to.

Claude Code warns at 10,000 tokens of MCP tool output and refuses more than 25,000 by default
(`MAX_MCP_OUTPUT_TOKENS`), counted by Claude's tokenizer, which publishes no tokenizer and
counts up to ~1.7x o200k. A budget counted by any other counter defaults to
`DEFAULT_MAX_TOKENS_CEILING`, which stays under Claude Code's wall whatever the model.
"""

from __future__ import annotations

__all__ = ["CLAUDE_MAX_TOKENS_CEILING", "DEFAULT_MAX_TOKENS_CEILING"]

CLAUDE_MAX_TOKENS_CEILING = 25_000
"""Claude Code warns at 10,000 tokens of MCP tool output and refuses more than 25,000 by
default (`MAX_MCP_OUTPUT_TOKENS`): the ceiling when budgets are counted in Claude tokens (the
`claude` counter preset)."""

DEFAULT_MAX_TOKENS_CEILING = 14_500
"""The ceiling in cl100k/o200k-like tokens (any other counter): Claude Code's 25,000 over
~1.7, the largest published inflation of Claude's tokenizers over o200k, so an answer at the
ceiling stays under Claude Code's default limit whatever the model."""
