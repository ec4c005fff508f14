"""A LangChain agent whose grep over the standard library returns megabytes: every tool result
the model reads stays within 4,000 tokens, and `read_more` pages through the rest.

Offline: the chat model is scripted (it calls `grep`, then follows each notice's `read_more`
call for a few pages); swap in any tool-calling model (`create_agent("openai:gpt-5-mini",
...)`) for a real run.

    uv run --all-packages python examples/langchain_agent.py
"""

from __future__ import annotations

import re
import sysconfig
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from langchain.agents import create_agent
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langchain_ragbudget.agents import ToolResultBudgetMiddleware
from langgraph.checkpoint.memory import InMemorySaver
from ragbudget import get_counter

BUDGET = 4_000
NEXT = re.compile(r'read_more\(handle="([^"]+)"\)')


@tool
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


class ScriptedModel(BaseChatModel):
    """Calls `grep(".")` (every line), then follows `read_more` for `pages` pages."""

    pages: int = 3

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedModel:  # type: ignore[override]
        return self

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        read = [m for m in messages if isinstance(m, ToolMessage)]
        follow = NEXT.search(str(read[-1].content)) if read else None
        if not read:
            call = {"name": "grep", "args": {"pattern": "."}, "id": "call0"}
            message = AIMessage("", tool_calls=[call])
        elif follow and len(read) <= self.pages:
            call = {"name": "read_more", "args": {"handle": follow[1]}, "id": f"call{len(read)}"}
            message = AIMessage("", tool_calls=[call])
        else:
            message = AIMessage(f"I read {len(read)} pages of the grep.")
        return ChatResult(generations=[ChatGeneration(message=message)])


def main(pages: int = 3) -> dict[str, Any]:
    agent = create_agent(
        ScriptedModel(pages=pages),
        tools=[grep],
        middleware=[ToolResultBudgetMiddleware(max_tokens=BUDGET)],
        checkpointer=InMemorySaver(),
    )
    config = {"configurable": {"thread_id": "example"}}
    state = agent.invoke({"messages": [("user", "Show me the sources.")]}, config)
    read = [m for m in state["messages"] if isinstance(m, ToolMessage)]
    counters = [get_counter("tiktoken:o200k_base"), get_counter("tiktoken:cl100k_base")]
    tokens = [max(c.count(str(m.content)) for c in counters) for m in read]
    whole = grep.invoke({"pattern": "."})
    print(f"grep returned {len(whole):,} characters; the model read {len(read)} results:")
    for message, n in zip(read, tokens, strict=True):
        notice = str(message.content).rsplit("\n\n", 1)[-1]
        print(f"  {n:,} tokens, ending {notice[:110]}...")
    return {"tokens": tokens, "whole": whole, "read": [str(m.content) for m in read]}


if __name__ == "__main__":
    from ragbudget import use_bundled_tiktoken_files

    use_bundled_tiktoken_files()
    main()
