"""`ToolResultBudgetMiddleware`: every tool result a LangChain agent's model reads within a
token budget, the rest served in pages that join back to the exact result.

Needs the `agents` extra (LangChain 1.x's `langchain.agents`):
`pip install 'langchain-ragbudget[agents]'`. docs/langchain-agents.md has the guide.

    from langchain.agents import create_agent
    from langchain_ragbudget.agents import ToolResultBudgetMiddleware

    budget = ToolResultBudgetMiddleware(max_tokens=4_000)
    agent = create_agent(model, tools=[grep], middleware=[budget])
"""

# No `from __future__ import annotations`: LangChain reads the continuation tool's signature
# (its `ToolRuntime` parameter) and LangGraph the state schema's annotations at run time.

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Annotated, Any, NotRequired

try:
    from langchain.agents.middleware.types import (
        AgentMiddleware,
        AgentState,
        ModelRequest,
        ModelResponse,
        PrivateStateAttr,
        ResponseT,
    )
    from langchain.tools import ToolRuntime
except ImportError as _import_error:
    msg = (
        "Please install `langchain` to use ragbudget's ToolResultBudgetMiddleware, you can use "
        "the `agents` optional group: pip install 'langchain-ragbudget[agents]'"
    )
    raise ImportError(msg) from _import_error

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool, StructuredTool
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.types import Command
from pydantic import BaseModel, Field
from ragbudget import TokenCounter, TruncationInfo, get_counter
from ragbudget.exact import default_spec
from ragbudget.pages import (
    BudgetSize,
    PageCache,
    Remainder,
    budget_tokens,
    first_page_with_notice,
    next_page_with_notice,
    parse_json,
    read_size,
)
from ragbudget.pages.reading import CONTINUATION_DESCRIPTION, MIN_MAX_TOKENS

from langchain_ragbudget._events import adispatch_truncation, dispatch_truncation

__all__ = [
    "DEFAULT_CONTINUATION_TOOL",
    "MIN_MAX_TOKENS",
    "ToolResultBudgetMiddleware",
    "ToolResultBudgetState",
    "merge_handles",
]

logger = logging.getLogger(__name__)

DEFAULT_CONTINUATION_TOOL = "read_more"
"""The continuation tool's name unless `continuation_tool=` gives another."""

ResultFilter = Sequence[BaseTool | str] | None


def merge_handles(left: dict[str, Any] | None, right: dict[str, Any] | None) -> dict[str, Any]:
    """The reducer of the state's two fields: `right`'s handles over `left`'s, a handle set to
    None dropped. Tool calls run in parallel each write their own handles."""
    merged = dict(left or {})
    for handle, value in (right or {}).items():
        if value is None:
            merged.pop(handle, None)
        else:
            merged[handle] = value
    return merged


class ToolResultBudgetState(AgentState[ResponseT]):
    """The agent state `ToolResultBudgetMiddleware` adds: plain JSON values, so any
    checkpointer stores them and a new agent on the same thread continues a walk."""

    ragbudget_results: NotRequired[
        Annotated[dict[str, dict[str, Any]], merge_handles, PrivateStateAttr]
    ]
    """Handle -> the whole result that was cut (`root`, `walls`, `tool`): written once."""
    ragbudget_cursors: NotRequired[
        Annotated[dict[str, dict[str, Any]], merge_handles, PrivateStateAttr]
    ]
    """Handle -> where its walk stands (`segments`, `offset`): rewritten by each page."""


class _ReadMoreInput(BaseModel):
    # Not extra="forbid": LangChain passes the injected `runtime` through this schema.
    handle: str = Field(
        description="The handle a cut tool result's notice gives.", min_length=1, max_length=64
    )


def _names(argument: str, tools: ResultFilter) -> frozenset[str] | None:
    if tools is None:
        return None
    if isinstance(tools, (str, BaseTool)):
        msg = f"{argument} must be a list of tools or tool names, got a single {tools!r}"
        raise TypeError(msg)
    names: set[str] = set()
    for tool in tools:
        if isinstance(tool, str):
            names.add(tool)
        elif isinstance(tool, BaseTool):
            names.add(tool.name)
        else:
            msg = f"{argument} must hold tools or tool names, got {tool!r}"
            raise TypeError(msg)
    return frozenset(names)


def _budget(max_tokens: BudgetSize, model: BaseChatModel | None) -> int:
    """`max_tokens` as tokens: an int, `("tokens", n)`, or `("fraction", f)` of `model`'s
    `max_input_tokens`, as SummarizationMiddleware reads its `trigger` and `keep`."""
    profile = getattr(model, "profile", None) or {}
    limit = profile.get("max_input_tokens") if isinstance(profile, dict) else None
    missing = (
        "max_tokens=('fraction', ...) needs the model's max_input_tokens: pass "
        "model=<the agent's chat model> (its profile must state max_input_tokens, e.g. "
        "ChatModel(..., profile={'max_input_tokens': ...})), or give max_tokens in tokens"
    )
    window = limit if model is not None and isinstance(limit, int) else None
    return budget_tokens(max_tokens, window, missing)


def _text(content: Any) -> str | None:
    """What the model reads of a ToolMessage's content, when it is text only (a string, or
    text blocks, joined as the FastMCP middleware joins them); None for anything else."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return None
    texts: list[str] = []
    for block in content:
        if isinstance(block, str):
            texts.append(block)
        elif isinstance(block, dict) and block.get("type") == "text":
            texts.append(str(block.get("text", "")))
        else:
            return None  # images, files: left as they are
    return "\n\n".join(texts)


class ToolResultBudgetMiddleware(AgentMiddleware[ToolResultBudgetState[Any], Any, Any]):
    """Keeps every tool result the model reads within `max_tokens`; the rest in pages.

    A result within the budget is returned untouched. A result over it is cut to the largest
    first page that fits with its notice: a text after a line, a JSON list or object (the
    rendering of a tool that returns rows) by trailing items at any depth, so the page still
    parses. The notice says what was kept of how much and names the call that reads on,
    `read_more(handle="...")`. The whole result is kept in the agent's state (plain JSON
    values, so the checkpointer stores it and a new agent on the same thread continues); each
    `read_more` call returns the next page, within the same budget, until the last. The pages
    join back to the exact result (`ragbudget.pages.join_pages`). Each cut emits the
    `ragbudget_truncation` custom event with its `TruncationInfo`, as the retriever does.

    Setup:
        ```bash
        pip install 'langchain-ragbudget[agents]'
        ```

    Key init args:
        max_tokens: the budget of each tool result the model reads, notice included: tokens
            (an int or `("tokens", n)`), or `("fraction", f)` of the model's
            `max_input_tokens`, which needs `model`.
        model: the agent's chat model, read for its profile's `max_input_tokens` when
            `max_tokens` is a fraction.
        tools: the tools (or names) whose results are budgeted; None: every tool.
        exclude_tools: tools (or names) never budgeted.
        counter: a `ragbudget.get_counter` spec or a `TokenCounter`; None: `exact` (the larger
            of cl100k_base and o200k_base) where bpe-openai is installed, else the estimate.
        continuation_tool: the name of the tool that serves the next pages.
        max_results: how many cut results the state keeps per thread (the oldest goes first).

    Instantiate:
        ```python
        from langchain_ragbudget.agents import ToolResultBudgetMiddleware

        budget = ToolResultBudgetMiddleware(max_tokens=4_000, exclude_tools=["calculator"])
        ```

    Use:
        ```python
        from langchain.agents import create_agent
        from langgraph.checkpoint.memory import InMemorySaver

        agent = create_agent(model, tools=[grep], middleware=[budget], checkpointer=InMemorySaver())
        config = {"configurable": {"thread_id": "1"}}
        agent.invoke({"messages": [("user", "Where is TODO used?")]}, config)
        ```

    Async:
        ```python
        await agent.ainvoke({"messages": [("user", "Where is TODO used?")]}, config)
        ```
    """

    state_schema = ToolResultBudgetState

    def __init__(
        self,
        *,
        max_tokens: BudgetSize = 10_000,
        model: BaseChatModel | None = None,
        tools: ResultFilter = None,
        exclude_tools: ResultFilter = None,
        counter: str | TokenCounter | None = None,
        continuation_tool: str = DEFAULT_CONTINUATION_TOOL,
        max_results: int = 32,
    ) -> None:
        super().__init__()
        self.max_tokens = _budget(max_tokens, model)
        self._only = _names("tools", tools)
        self._excluded = _names("exclude_tools", exclude_tools) or frozenset()
        if not isinstance(continuation_tool, str) or not continuation_tool.isidentifier():
            msg = (
                f"continuation_tool must be a tool name (an identifier), got {continuation_tool!r}"
            )
            raise ValueError(msg)
        if continuation_tool in (self._only or ()):
            msg = f"tools names {continuation_tool!r}, the continuation tool: it budgets itself"
            raise ValueError(msg)
        if isinstance(max_results, bool) or not isinstance(max_results, int) or max_results < 1:
            msg = f"max_results must be an int >= 1, got {max_results!r}"
            raise ValueError(msg)
        self.max_results = max_results
        self.counter: TokenCounter = (
            counter
            if counter is not None and not isinstance(counter, str)
            else get_counter(default_spec() if counter is None else counter)
        )
        self.continuation_tool = continuation_tool
        self.tools = [
            StructuredTool.from_function(
                name=continuation_tool,
                description=CONTINUATION_DESCRIPTION,
                func=self._read_more,
                coroutine=self._aread_more,
                args_schema=_ReadMoreInput,
                infer_schema=False,
            )
        ]

    # -- which results -------------------------------------------------------------------

    def _applies(self, name: str) -> bool:
        if name == self.continuation_tool or name in self._excluded:
            return False
        return self._only is None or name in self._only

    def _check_names(self, request: ModelRequest[Any]) -> None:
        ours = self.tools[0]
        for tool in request.tools:
            name = tool.get("name") if isinstance(tool, dict) else tool.name
            if name == self.continuation_tool and tool is not ours:
                msg = (
                    f"the agent has its own tool named {name!r}, which "
                    f"ToolResultBudgetMiddleware's continuation tool would shadow: pass "
                    f"continuation_tool='<a free name>' to ToolResultBudgetMiddleware (or "
                    f"rename the agent's tool)"
                )
                raise ValueError(msg)

    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
    ) -> ModelResponse[Any]:
        """Refuse an agent whose own tool has the continuation tool's name."""
        self._check_names(request)
        return handler(request)

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> ModelResponse[Any]:
        """Refuse an agent whose own tool has the continuation tool's name."""
        self._check_names(request)
        return await handler(request)

    # -- cutting -------------------------------------------------------------------------

    def _size(self, text: str) -> int:
        return read_size(text, self.max_tokens, self.counter)

    def _call(self, handle: str) -> str:
        return f'{self.continuation_tool}(handle="{handle}")'

    def _cut(self, text: str, tool: str) -> tuple[str, Remainder, str, int] | None:
        """The first page with its notice, the remainder, its handle and the tokens used."""
        handle = PageCache.new_handle()
        cut = first_page_with_notice(
            text, self.max_tokens, self.counter, self._call(handle), value=parse_json(text),
            tool=tool,
        )  # fmt: skip
        if cut is None:  # pragma: no cover - only a counter far from additive gets here
            return None
        content, remainder, used = cut
        return content, remainder, handle, used

    def _budgeted(
        self, request: ToolCallRequest, result: ToolMessage | Command[Any]
    ) -> tuple[Command[Any], TruncationInfo] | None:
        """The Command that replaces `result` (the first page, the whole result into state),
        and the cut's report; None when `result` is left as it is."""
        name = request.tool_call["name"]
        if not isinstance(result, ToolMessage) or not self._applies(name):
            return None  # a Command is the tool's own state update: never rewritten
        text = _text(result.content)
        if text is None or self._size(text) <= self.max_tokens:
            return None
        cut = self._cut(text, name)
        if cut is None:  # pragma: no cover - see _cut
            content = f"[ragbudget: result left out: no part of it fit {self.max_tokens:,} tokens]"
            return self._replace(request, result, content, {}), self._info(request, 0)
        content, remainder, handle, used = cut
        kept = remainder.to_dict()
        results: dict[str, Any] = {
            handle: {"root": kept["root"], "walls": kept["walls"], "tool": name}
        }
        cursors: dict[str, Any] = {handle: {"segments": kept["segments"], "offset": 0}}
        state = request.state if isinstance(request.state, dict) else {}
        held = list(state.get("ragbudget_results") or {})
        for old in held[: max(0, len(held) + 1 - self.max_results)]:
            results[old], cursors[old] = None, None
        update = {"ragbudget_results": results, "ragbudget_cursors": cursors}
        logger.debug("%s: result cut to %s tokens, handle %s", name, used, handle)
        return self._replace(request, result, content, update), self._info(request, used)

    def _replace(
        self,
        request: ToolCallRequest,
        result: ToolMessage,
        content: str,
        update: dict[str, Any],
    ) -> Command[Any]:
        # A copy: the tool's message (its artifact, id, status) is kept, only the text changes.
        message = result.model_copy(update={"content": content})
        return Command(update={"messages": [message], **update})

    def _info(self, request: ToolCallRequest, used: int) -> TruncationInfo:
        return TruncationInfo.of(
            original_count=1,
            returned_count=1,
            dropped_ids=[],
            cut_ids=[str(request.tool_call.get("id") or request.tool_call["name"])],
            used_tokens=used,
            max_tokens=self.max_tokens,
            counter=self.counter,
        )

    @staticmethod
    def _callbacks(request: ToolCallRequest) -> Any:
        runtime = getattr(request, "runtime", None)
        config = getattr(runtime, "config", None) or {}
        return config.get("callbacks")

    def wrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], ToolMessage | Command[Any]],
    ) -> ToolMessage | Command[Any]:
        """Run the tool; a result over the budget becomes its first page and a handle."""
        result = handler(request)
        budgeted = self._budgeted(request, result)
        if budgeted is None:
            return result
        command, info = budgeted
        dispatch_truncation(info, self._callbacks(request))
        return command

    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command[Any]]],
    ) -> ToolMessage | Command[Any]:
        """The async twin of `wrap_tool_call`; counting runs in a worker thread."""
        result = await handler(request)
        budgeted = await asyncio.to_thread(self._budgeted, request, result)
        if budgeted is None:
            return result
        command, info = budgeted
        await adispatch_truncation(info, self._callbacks(request))
        return command

    # -- the continuation tool -------------------------------------------------------------

    def _read_more(self, handle: str, runtime: ToolRuntime) -> Command[Any] | ToolMessage:
        state = runtime.state if isinstance(runtime.state, dict) else {}
        entry = (state.get("ragbudget_results") or {}).get(handle)
        cursor = (state.get("ragbudget_cursors") or {}).get(handle)
        call_id = str(runtime.tool_call_id)
        if entry is None or cursor is None:
            content = (
                f"[ragbudget: handle {handle!r} is unknown, or its result was read to the end "
                f"or dropped (the {self.max_results} most recent cut results are kept): call "
                "the original tool again, with narrower arguments to get less]"
            )
            return ToolMessage(
                content, tool_call_id=call_id, name=self.continuation_tool, status="error"
            )
        found = next_page_with_notice(
            # Rebuilt each attempt: a page that meets an oversized item adds segments.
            lambda: Remainder.from_dict({**entry, "segments": cursor["segments"]}),
            cursor["offset"], self.max_tokens, self.counter, self._call(handle),
        )  # fmt: skip
        if found is None:  # pragma: no cover - only a counter far from additive gets here
            content = f"[ragbudget: no page of this result fits {self.max_tokens:,} tokens]"
            return ToolMessage(
                content, tool_call_id=call_id, name=self.continuation_tool, status="error"
            )
        content, page, remainder = found
        update: dict[str, Any]
        if page.next_offset is None:  # read to the end: the state lets the result go
            update = {"ragbudget_results": {handle: None}, "ragbudget_cursors": {handle: None}}
        else:
            segments = remainder.to_dict()["segments"]
            update = {
                "ragbudget_cursors": {handle: {"segments": segments, "offset": page.next_offset}}
            }
        message = ToolMessage(content, tool_call_id=call_id, name=self.continuation_tool)
        return Command(update={"messages": [message], **update})

    async def _aread_more(self, handle: str, runtime: ToolRuntime) -> Command[Any] | ToolMessage:
        return await asyncio.to_thread(self._read_more, handle, runtime)
