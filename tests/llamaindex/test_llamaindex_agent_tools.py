"""ToolBudget in a real LlamaIndex FunctionAgent run, with a scripted mock LLM (no API).

Every tool output the LLM reads is within the budget by exact o200k and cl100k counts; walking
`read_more` to the end rebuilds the tool's output exactly (JSON: every row once, in order);
the whole output is held in the workflow Context's state, and a Context saved with `to_dict`
and restored continues the walk; sync `tool.call` and async `tool.acall` (the in-memory cache
without a Context); the tool's own output is never modified.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from typing import Any

import pytest
from agent_data import BUDGET, LOG, NEXT, REAL, ROWS
from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.base.llms.types import ChatMessage, MessageRole, ToolCallBlock
from llama_index.core.llms.mock import MockFunctionCallingLLM
from llama_index.core.tools import BaseTool, FunctionTool, ToolMetadata, ToolOutput
from llama_index.core.workflow import Context
from llama_index.tools.ragbudget import ToolBudget, budget_tools
from ragbudget.pages import join_pages

# The workflows package lists a FunctionAgent's methods with inspect.getmembers, which reads
# pydantic's deprecated instance attributes: a third-party warning we cannot fix from here.
pytestmark = pytest.mark.filterwarnings(
    "ignore:Accessing the 'model_:pydantic.warnings.PydanticDeprecatedSince211"
)

ROWS_BEFORE = copy.deepcopy(ROWS)


def server_log() -> str:
    """The server's log."""
    return LOG


def user_rows() -> list[dict[str, Any]]:
    """Every user row (the same list each call: the budget must not modify it)."""
    return ROWS


class Walker:
    """A mock LLM's script: call `first`, then follow each `read_more` notice, at most `pages`
    times; then answer. Keeps every list of messages the LLM was given."""

    def __init__(self, first: str = "server_log", pages: int = 10_000, **first_kwargs: Any) -> None:
        self.first, self.pages, self.first_kwargs = first, pages, first_kwargs
        self.seen: list[list[ChatMessage]] = []

    def __call__(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatMessage:
        self.seen.append(list(messages))
        read = [m for m in messages if m.role == MessageRole.TOOL]
        call_id = f"call{len(self.seen)}"
        follow = NEXT.search(read[-1].content or "") if read else None
        if not read or read[-1].content == "":
            return _call(call_id, self.first, self.first_kwargs)
        if follow and self.pages > 0:
            self.pages -= 1
            return _call(call_id, "read_more", {"handle": follow[1]})
        return ChatMessage(role=MessageRole.ASSISTANT, content="done")

    def tool_messages(self) -> list[str]:
        """What the LLM read of each tool output, in order (its last call saw them all)."""
        return [m.content or "" for m in self.seen[-1] if m.role == MessageRole.TOOL]


def _call(call_id: str, name: str, kwargs: dict[str, Any]) -> ChatMessage:
    block = ToolCallBlock(tool_call_id=call_id, tool_name=name, tool_kwargs=kwargs)
    return ChatMessage(role=MessageRole.ASSISTANT, blocks=[block])


def _agent(walker: Walker, **kwargs: Any) -> FunctionAgent:
    tools = budget_tools([server_log, user_rows], max_tokens=BUDGET, **kwargs)
    return FunctionAgent(tools=tools, llm=MockFunctionCallingLLM(response_generator=walker))


def _body(content: str) -> str:
    return content.rsplit("\n\n[ragbudget:", 1)[0]


def _within(contents: list[str], budget: int = BUDGET) -> int:
    worst = max(c.count(text) for text in contents for c in REAL)
    assert worst <= budget
    return worst


async def _run(agent: FunctionAgent, ctx: Context | None = None) -> Context:
    handler = agent.run(user_msg="read it", ctx=ctx, max_iterations=500)
    await handler
    assert handler.ctx is not None
    return handler.ctx


async def test_a_750kb_text_output_is_paged_within_budget_and_rebuilt_exactly() -> None:
    walker = Walker()
    ctx = await _run(_agent(walker))
    read = walker.tool_messages()
    assert len(read) > 20
    _within(read)
    assert "showing lines 1-" in read[0] and "of 12,000" in read[0]
    assert "This is the last page." in read[-1]
    assert join_pages(_body(read[0]), [_body(m) for m in read[1:]]) == LOG
    held = await ctx.store.get("ragbudget_results")
    assert len(held) == 1 and list(held.values()) == [None]  # read to the end: let go


async def test_a_5000_row_json_list_every_row_once_in_order_unmodified() -> None:
    walker = Walker(first="user_rows")
    await _run(_agent(walker))
    read = walker.tool_messages()
    _within(read)
    first = json.loads(_body(read[0]))  # JSON, though the tool's own rendering is its str()
    assert isinstance(first, list) and 0 < len(first) < len(ROWS)
    assert f"kept {len(first):,} of 5,000 items" in read[0]
    rebuilt = join_pages(first, [json.loads(_body(m)) for m in read[1:]])
    assert rebuilt == ROWS == ROWS_BEFORE  # every row once, in order; the tool's list intact


# The agent's memory holds its tokenizer, which workflows cannot serialize: it warns, skips
# it, and the restored run starts a new memory. The cut output is in the state, and is kept.
@pytest.mark.filterwarnings("ignore::workflows.context.state_store.UnserializableKeyWarning")
async def test_a_restored_context_continues_the_walk() -> None:
    first = Walker(pages=2)
    ctx = await _run(_agent(first))
    data = json.loads(json.dumps(ctx.to_dict()))  # the Context as plain JSON, e.g. on disk
    handle = NEXT.search(first.tool_messages()[-1])[1]  # type: ignore[index]
    second = Walker(first="read_more", handle=handle)  # a new run, told the handle
    agent = _agent(second)
    await _run(agent, Context.from_dict(agent, data))
    read = [*first.tool_messages(), *second.tool_messages()]
    assert len(first.tool_messages()) == 3 and len(read) > 20
    _within(read)
    assert join_pages(_body(read[0]), [_body(m) for m in read[1:]]) == LOG


def _walk(tools: list[BaseTool], output: ToolOutput) -> list[str]:
    seen = [output.content]
    while follow := NEXT.search(seen[-1]):
        page = tools[-1].call(handle=follow[1])
        assert not page.is_error, page.content
        seen.append(page.content)
    return seen


def test_sync_call_walks_the_in_memory_cache() -> None:
    tools = budget_tools([server_log, lambda: json.dumps(ROWS)], max_tokens=BUDGET)
    text = _walk(tools, tools[0].call())
    _within(text)
    assert join_pages(_body(text[0]), [_body(m) for m in text[1:]]) == LOG
    rows = _walk(tools, tools[1].call())  # a tool that returns a JSON string
    _within(rows)
    assert join_pages(json.loads(_body(rows[0])), [json.loads(_body(m)) for m in rows[1:]]) == ROWS
    again = tools[2].call(handle=NEXT.search(text[-2])[1])  # type: ignore[index]
    assert again.is_error and "call the original tool again" in again.content


async def test_async_acall_without_a_context_walks_the_in_memory_cache() -> None:
    tools = budget_tools([server_log], max_tokens=BUDGET)
    seen = [(await tools[0].acall()).content]
    while follow := NEXT.search(seen[-1]):
        seen.append((await tools[1].acall(handle=follow[1])).content)
    _within(seen)
    assert join_pages(_body(seen[0]), [_body(m) for m in seen[1:]]) == LOG


class Fixed(BaseTool):
    """A tool that returns the same ToolOutput object every call."""

    def __init__(self, output: ToolOutput) -> None:
        self.output = output

    @property
    def metadata(self) -> ToolMetadata:
        return ToolMetadata(name="fixed", description="A fixed output.")

    def __call__(self, input: Any = None) -> ToolOutput:
        return self.output


def test_within_budget_untouched_and_the_tools_output_never_modified() -> None:
    small = ToolOutput(content="tiny", tool_name="fixed", raw_input={}, raw_output="tiny")
    budgeted, _ = budget_tools([Fixed(small)])
    assert budgeted.call() is small  # within the budget: the tool's own output
    big_text = "word " * 5_000
    big = ToolOutput(content=big_text, tool_name="fixed", raw_input={"q": 1}, raw_output=[1, 2])
    before = big.model_dump()
    budgeted, _ = budget_tools([Fixed(big)], max_tokens=200)
    cut = budgeted.call()
    assert cut is not big and big.model_dump() == before and big.content == big_text
    assert cut.raw_output is big.raw_output and cut.raw_input == {"q": 1}  # for your code
    assert REAL[0].count(cut.content) <= 200 and "read_more(handle=" in cut.content


def test_metadata_kept_and_a_name_clash_refused() -> None:
    tool = FunctionTool.from_defaults(server_log, return_direct=True)
    wrapped, read_more = budget_tools([tool])
    assert wrapped.metadata is tool.metadata and read_more.metadata.name == "read_more"
    assert list(read_more.metadata.get_parameters_dict()["properties"]) == ["handle"]

    def read_more_own(handle: str) -> str:
        """The agent's own read_more."""
        return handle

    own = FunctionTool.from_defaults(read_more_own, name="read_more")
    with pytest.raises(ValueError, match="continuation_tool='<a free name>'"):
        budget_tools([own])
    assert budget_tools([own], continuation_tool="more_of")[-1].metadata.name == "more_of"


def test_a_bad_or_unknown_handle_is_an_error_the_llm_can_act_on() -> None:
    read_more = budget_tools([server_log])[-1]
    assert "unknown" in read_more.call(handle="nope").content
    bad = read_more.call(offset=3)
    assert bad.is_error and 'takes one argument, handle="..."' in bad.content


def test_the_oldest_cut_outputs_go_first() -> None:
    budget = ToolBudget(max_tokens=BUDGET, max_results=2)
    log, read_more = budget.wrap([server_log])
    handles = [NEXT.search(log.call().content)[1] for _ in range(3)]  # type: ignore[index]
    assert read_more.call(handle=handles[0]).is_error
    assert not read_more.call(handle=handles[2]).is_error


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [({"max_tokens": 10}, ValueError, "max_tokens must be >= 128"),
     ({"max_tokens": ("fraction", 0.1)}, ValueError, "pass llm="),
     ({"max_tokens": ("fraction", 1.5)}, ValueError, "fraction must be > 0"),
     ({"max_tokens": "lots"}, TypeError, "max_tokens must be an int"),
     ({"continuation_tool": "read more"}, ValueError, "continuation_tool must be"),
     ({"max_results": 0}, ValueError, "max_results must be"),
     ({"cache_max_chars": -1}, ValueError, "cache_max_chars must be"),
     ({"cache_ttl_seconds": 0}, ValueError, "cache_ttl_seconds must be")],
)  # fmt: skip
def test_errors_name_the_argument(kwargs: dict[str, Any], error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        ToolBudget(**kwargs)


def test_tools_must_be_a_list_and_a_fraction_of_the_context_window() -> None:
    with pytest.raises(TypeError, match="tools must be a list"):
        budget_tools(server_log)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="tools must hold"):
        budget_tools([3])  # type: ignore[list-item]
    llm = MockFunctionCallingLLM()
    assert ToolBudget(max_tokens=("fraction", 0.5), llm=llm).max_tokens == (
        llm.metadata.context_window // 2
    )
    assert ToolBudget(max_tokens=("tokens", 500)).max_tokens == 500


def test_the_same_pages_and_notices_as_the_langchain_middleware() -> None:
    """Both agent integrations page through `ragbudget.pages.reading`: the same text cut by
    each reads the same, handles aside."""
    from langchain_ragbudget.agents import ToolResultBudgetMiddleware

    for text in (LOG[:60_000], json.dumps(ROWS[:800])):
        langchain = ToolResultBudgetMiddleware(max_tokens=2_000)._cut(text, "t")
        output = ToolOutput(content=text, tool_name="t", raw_input={}, raw_output=text)
        llamaindex = ToolBudget(max_tokens=2_000)._cut(output)
        assert langchain is not None and llamaindex is not None
        same = NEXT.sub("read_more(handle=H)", langchain[0])
        assert same == NEXT.sub("read_more(handle=H)", llamaindex[0].content)


async def test_a_wrapped_tool_that_takes_the_context_still_gets_it() -> None:
    async def remember(ctx: Context) -> str:
        """Marks the run's state."""
        await ctx.store.set("seen", True)
        return "ok"

    remember.__annotations__["ctx"] = Context  # this module's annotations are strings
    walker = Walker(first="remember")
    agent = FunctionAgent(tools=budget_tools([remember]),
                          llm=MockFunctionCallingLLM(response_generator=walker))  # fmt: skip
    ctx = await _run(agent)
    assert await ctx.store.get("seen") is True and walker.tool_messages() == ["ok"]


def test_a_cut_dispatches_a_tool_budget_event() -> None:
    # As the postprocessor's TokenBudgetEvent: LlamaIndex's instrumentation sees each cut.
    from llama_index.core.instrumentation import get_dispatcher  # type: ignore[attr-defined]
    from llama_index.core.instrumentation.event_handlers import BaseEventHandler
    from llama_index.core.instrumentation.events import BaseEvent
    from llama_index.tools.ragbudget import ToolBudgetEvent

    seen: list[ToolBudgetEvent] = []

    class Collect(BaseEventHandler):
        @classmethod
        def class_name(cls) -> str:
            return "Collect"

        def handle(self, event: BaseEvent, **kwargs: Any) -> None:
            if isinstance(event, ToolBudgetEvent):
                seen.append(event)

    dispatcher = get_dispatcher("llama_index.tools.ragbudget.base")
    handler = Collect()
    dispatcher.add_event_handler(handler)
    try:
        tools = budget_tools([server_log], max_tokens=BUDGET)
        output = tools[0].call()
        small = budget_tools([lambda: "short"], max_tokens=BUDGET)[0].call()
    finally:
        dispatcher.event_handlers = [h for h in dispatcher.event_handlers if h is not handler]
    (event,) = seen
    assert event.tool_name == "server_log" and event.handle in output.content
    assert event.info.truncated and event.info.cut_ids == ["server_log"]
    assert 0 < event.info.used_tokens <= BUDGET
    assert small.content == "short"
