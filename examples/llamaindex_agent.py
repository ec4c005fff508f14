"""A LlamaIndex FunctionAgent whose grep over the standard library returns megabytes: every tool
output the LLM reads stays within 4,000 tokens, and `read_more` pages through the rest.

Offline: the LLM is LlamaIndex's `MockFunctionCallingLLM`, scripted to call `grep` and then
follow each notice's `read_more` call for a few pages; pass any function-calling LLM
(`llm=OpenAI(model=...)`) for a real run.

    uv run --all-packages python examples/llamaindex_agent.py
"""

from __future__ import annotations

import asyncio
import re
import sysconfig
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.base.llms.types import ChatMessage, MessageRole, ToolCallBlock
from llama_index.core.llms.mock import MockFunctionCallingLLM
from llama_index.tools.ragbudget import budget_tools
from ragbudget import get_counter

BUDGET = 4_000
NEXT = re.compile(r'read_more\(handle="([^"]+)"\)')


def grep(pattern: str) -> str:
    """Every line of the standard library's `json` and `email` sources matching `pattern`."""
    root = Path(sysconfig.get_paths()["stdlib"])
    found = re.compile(pattern)
    return "".join(
        f"{path.relative_to(root)}:{n}:{line}\n"
        for folder in ("json", "email")
        for path in sorted((root / folder).rglob("*.py"))
        for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1)
        if found.search(line)
    )


class Script:
    """The mock LLM's replies: `grep(".")`, then `read_more` for `pages` pages, then an answer.
    Keeps what the LLM was last given."""

    def __init__(self, pages: int) -> None:
        self.pages = pages
        self.last: list[ChatMessage] = []

    def __call__(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatMessage:
        self.last = list(messages)
        read = [m for m in messages if m.role == MessageRole.TOOL]
        follow = NEXT.search(read[-1].content or "") if read else None
        if not read:
            return _call("call0", "grep", {"pattern": "."})
        if follow and len(read) <= self.pages:
            return _call(f"call{len(read)}", "read_more", {"handle": follow[1]})
        return ChatMessage(role=MessageRole.ASSISTANT, content=f"I read {len(read)} pages.")


def _call(call_id: str, name: str, kwargs: dict[str, Any]) -> ChatMessage:
    block = ToolCallBlock(tool_call_id=call_id, tool_name=name, tool_kwargs=kwargs)
    return ChatMessage(role=MessageRole.ASSISTANT, blocks=[block])


async def main(pages: int = 3) -> dict[str, Any]:
    script = Script(pages)
    agent = FunctionAgent(
        tools=budget_tools([grep], max_tokens=BUDGET),  # [grep, read_more]
        llm=MockFunctionCallingLLM(response_generator=script),
    )
    await agent.run(user_msg="Show me the sources.")
    read = [m.content or "" for m in script.last if m.role == MessageRole.TOOL]
    counters = [get_counter("tiktoken:o200k_base"), get_counter("tiktoken:cl100k_base")]
    tokens = [max(c.count(text) for c in counters) for text in read]
    whole = grep(".")
    print(f"grep returned {len(whole):,} characters; the LLM read {len(read)} outputs:")
    for text, n in zip(read, tokens, strict=True):
        print(f"  {n:,} tokens, ending {text.rsplit(chr(10) * 2, 1)[-1][:110]}...")
    return {"tokens": tokens, "whole": whole, "read": read}


if __name__ == "__main__":
    from ragbudget import use_bundled_tiktoken_files

    use_bundled_tiktoken_files()
    asyncio.run(main())
