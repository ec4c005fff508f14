"""ToolResultBudgetMiddleware in a real `create_agent` loop, with a scripted model (no API).

Every ToolMessage the model reads is within the budget by exact o200k and cl100k counts;
walking `read_more` to the end rebuilds the tool's output exactly (JSON: every row once, in
order); a new agent on the same checkpointer and thread continues the walk; sync, async and
`stream_mode="updates"`; properties on small generated results.
"""

from __future__ import annotations

import copy
import json
import string
from collections.abc import Sequence
from typing import Any

import pytest
from agent_data import BUDGET, LOG, NEXT, REAL, ROWS
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain.agents import create_agent
from langchain.tools import ToolRuntime
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langchain_ragbudget import TRUNCATION_EVENT
from langchain_ragbudget.agents import ToolResultBudgetMiddleware, merge_handles
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.types import Command
from ragbudget.pages import join_pages


@tool
def server_log() -> str:
    """The server's log."""
    return LOG


@tool
def user_rows() -> list[dict[str, Any]]:
    """Every user row."""
    return copy.deepcopy(ROWS)


class Walker(BaseChatModel):
    """Calls `first`, then follows each `read_more` notice, at most `pages` times; then ends."""

    first: str = "server_log"
    pages: int = 10_000
    seen: list[list[BaseMessage]] = []  # noqa: RUF012 - a pydantic field, copied per instance

    @property
    def _llm_type(self) -> str:
        return "walker"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Walker:  # type: ignore[override]
        return self

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None,
                  **kwargs: Any) -> ChatResult:  # fmt: skip
        self.seen.append(list(messages))
        read = [m for m in messages if isinstance(m, ToolMessage)]
        call_id = f"call{len(self.seen)}"
        follow = NEXT.search(str(read[-1].content)) if read else None
        if not read:
            message = AIMessage("", tool_calls=[{"name": self.first, "args": {}, "id": call_id}])
        elif follow and self.pages > 0:
            self.pages -= 1
            args = {"handle": follow[1]}
            message = AIMessage("", tool_calls=[{"name": "read_more", "args": args, "id": call_id}])
        else:
            message = AIMessage("done")
        return ChatResult(generations=[ChatGeneration(message=message)])


def _tool_messages(messages: list[BaseMessage]) -> list[ToolMessage]:
    return [m for m in messages if isinstance(m, ToolMessage)]


def _body(message: ToolMessage) -> str:
    return str(message.content).rsplit("\n\n[ragbudget:", 1)[0]


def _within(messages: list[ToolMessage], budget: int = BUDGET) -> int:
    worst = max(c.count(str(m.content)) for m in messages for c in REAL)
    assert worst <= budget
    return worst


def _agent(model: Walker, checkpointer: Any = None, **kwargs: Any) -> Any:
    budget = ToolResultBudgetMiddleware(max_tokens=kwargs.pop("max_tokens", BUDGET), **kwargs)
    return create_agent(model, tools=[server_log, user_rows], middleware=[budget],
                        checkpointer=checkpointer)  # fmt: skip


def test_a_huge_text_result_is_paged_within_budget_and_rebuilt_exactly() -> None:
    out = _agent(Walker()).invoke({"messages": [("user", "read the log")]})
    read = _tool_messages(out["messages"])
    assert len(read) > 20
    _within(read)
    assert "showing lines 1-" in str(read[0].content) and "of 12,000" in str(read[0].content)
    assert "This is the last page." in str(read[-1].content)
    assert join_pages(_body(read[0]), [_body(m) for m in read[1:]]) == LOG


async def test_a_5000_row_json_result_async_every_row_once_in_order() -> None:
    out = await _agent(Walker(first="user_rows")).ainvoke({"messages": [("user", "rows")]})
    read = _tool_messages(out["messages"])
    _within(read)
    first = json.loads(_body(read[0]))
    assert isinstance(first, list) and 0 < len(first) < len(ROWS)  # still JSON, shortened
    assert f"kept {len(first):,} of 5,000 items" in str(read[0].content)
    rebuilt = join_pages(first, [json.loads(_body(m)) for m in read[1:]])
    assert rebuilt == ROWS  # every row once, in order


def test_a_new_agent_on_the_same_thread_continues_the_walk() -> None:
    saver, config = InMemorySaver(), {"configurable": {"thread_id": "t"}}
    _agent(Walker(pages=2), saver).invoke({"messages": [("user", "read the log")]}, config)
    second = Walker()
    out = _agent(second, saver).invoke({"messages": [("user", "go on")]}, config)
    read = _tool_messages(out["messages"])
    assert len(read) > 3  # 1 first page + 2 pages by the first agent, the rest by the second
    _within(read)
    assert join_pages(_body(read[0]), [_body(m) for m in read[1:]]) == LOG
    state = _agent(Walker(), saver).get_state(config).values
    held = state.get("ragbudget_results") or {}
    assert [v for v in held.values() if v is not None] == []  # read to the end: let go


def test_stream_updates_and_the_truncation_event() -> None:
    events: list[Any] = []

    class Events(BaseCallbackHandler):
        def on_custom_event(self, name: str, data: Any, **kwargs: Any) -> None:
            events.append((name, data))

    updates = list(
        _agent(Walker(pages=1)).stream(
            {"messages": [("user", "log")]}, {"callbacks": [Events()]}, stream_mode="updates"
        )
    )
    tools = [u["tools"] for u in updates if "tools" in u]
    assert len(tools) == 2
    assert "read_more(handle=" in str(tools[0]["messages"][0].content)
    ((name, info),) = events
    assert name == TRUNCATION_EVENT and info.truncated and info.max_tokens == BUDGET
    assert info.used_tokens <= BUDGET


def test_within_budget_untouched_excluded_tools_and_name_clash() -> None:
    @tool
    def small() -> str:
        """A small result."""
        return "tiny"

    agent = create_agent(Walker(first="small"), tools=[small],
                         middleware=[ToolResultBudgetMiddleware(max_tokens=BUDGET)])  # fmt: skip
    (message,) = _tool_messages(agent.invoke({"messages": [("user", "x")]})["messages"])
    assert message.content == "tiny"
    out = _agent(Walker(), exclude_tools=["server_log"]).invoke({"messages": [("user", "x")]})
    assert _tool_messages(out["messages"])[0].content == LOG

    @tool
    def read_more(handle: str) -> str:
        """The agent's own read_more."""
        return handle

    clash = create_agent(Walker(), tools=[read_more], middleware=[ToolResultBudgetMiddleware()])
    with pytest.raises(ValueError, match="continuation_tool='<a free name>'"):
        clash.invoke({"messages": [("user", "x")]})


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [({"max_tokens": 10}, ValueError, "max_tokens must be >= 128"),
     ({"max_tokens": ("fraction", 0.1)}, ValueError, "pass model="),
     ({"max_tokens": ("fraction", 1.5)}, ValueError, "fraction must be > 0"),
     ({"max_tokens": "lots"}, TypeError, "max_tokens must be an int"),
     ({"tools": "grep"}, TypeError, "tools must be a list"),
     ({"exclude_tools": [3]}, TypeError, "exclude_tools must hold"),
     ({"continuation_tool": "read more"}, ValueError, "continuation_tool must be"),
     ({"max_results": 0}, ValueError, "max_results must be")],
)  # fmt: skip
def test_errors_name_the_argument(kwargs: dict[str, Any], error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        ToolResultBudgetMiddleware(**kwargs)


def test_a_fraction_of_the_models_max_input_tokens() -> None:
    model = Walker(profile={"max_input_tokens": 200_000})
    assert (
        ToolResultBudgetMiddleware(max_tokens=("fraction", 0.1), model=model).max_tokens == 20_000
    )
    assert ToolResultBudgetMiddleware(max_tokens=("tokens", 500)).max_tokens == 500


def test_artifact_and_commands_are_left_intact() -> None:
    budget = ToolResultBudgetMiddleware(max_tokens=200)
    request = ToolCallRequest(tool_call={"name": "t", "args": {}, "id": "c1"}, tool=None,
                              state={"messages": []}, runtime=None)  # type: ignore[arg-type]  # fmt: skip
    big = ToolMessage("word " * 5_000, tool_call_id="c1", artifact={"raw": [1, 2]})
    command = budget.wrap_tool_call(request, lambda _: big)
    assert isinstance(command, Command)
    (message,) = command.update["messages"]  # type: ignore[index]
    assert message.artifact == {"raw": [1, 2]} and big.content == "word " * 5_000
    own = Command(update={"messages": [big]})
    assert budget.wrap_tool_call(request, lambda _: own) is own


def _walk(budget: ToolResultBudgetMiddleware, content: str) -> list[str]:
    """The contents the model reads of a tool result `content`: driven by hand, the state kept
    as LangGraph keeps it (the reducer)."""
    request = ToolCallRequest(tool_call={"name": "t", "args": {}, "id": "c0"}, tool=None,
                              state={"messages": []}, runtime=None)  # type: ignore[arg-type]  # fmt: skip
    result = budget.wrap_tool_call(request, lambda _: ToolMessage(content, tool_call_id="c0"))
    if isinstance(result, ToolMessage):
        return [str(result.content)]
    assert isinstance(result, Command) and isinstance(result.update, dict)
    state: dict[str, Any] = {}
    seen: list[str] = []
    while True:
        update = result.update
        for key in ("ragbudget_results", "ragbudget_cursors"):
            state[key] = merge_handles(state.get(key), update.get(key))
        text = str(update["messages"][0].content)
        seen.append(text)
        follow = NEXT.search(text)
        if follow is None:
            return seen
        runtime = ToolRuntime(state=state, context=None, config={}, stream_writer=lambda _: None,
                              tool_call_id=f"c{len(seen)}", store=None)  # fmt: skip
        result = budget._read_more(follow[1], runtime)
        assert isinstance(result, Command), result.content
        assert isinstance(result.update, dict)


KEYS = string.ascii_letters + string.digits + "_-"  # a key is never cut: keys of many tokens
# in a deep path can leave no room for a page at the smallest budget (see the docs)
SMALL = settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
json_values = st.recursive(
    st.integers() | st.text(max_size=40),
    lambda inner: (
        st.lists(inner, max_size=30) | st.dictionaries(st.text(KEYS, max_size=8), inner, max_size=6)
    ),
    max_leaves=60,
)


@SMALL
@given(lines=st.lists(st.text(max_size=120), min_size=1, max_size=60))
def test_property_text_never_over_and_lossless(lines: list[str]) -> None:
    text = "\n".join(lines)
    kept = copy.copy(text)
    seen = _walk(ToolResultBudgetMiddleware(max_tokens=128, counter="tiktoken:o200k_base"), text)
    assert max(REAL[0].count(s) for s in seen) <= 128
    bodies = [s.rsplit("\n\n[ragbudget:", 1)[0] for s in seen]
    assert (join_pages(bodies[0], bodies[1:]) if len(seen) > 1 else seen[0]) == text == kept


@SMALL
@given(value=st.lists(json_values, min_size=1, max_size=40))
def test_property_json_never_over_and_lossless(value: list[Any]) -> None:
    content = json.dumps(value)
    seen = _walk(ToolResultBudgetMiddleware(max_tokens=128, counter="tiktoken:o200k_base"),
                 content)  # fmt: skip
    assert max(REAL[0].count(s) for s in seen) <= 128
    if len(seen) == 1:
        assert seen[0] == content
        return
    bodies = [s.rsplit("\n\n[ragbudget:", 1)[0] for s in seen]
    first = json.loads(bodies[0])
    rebuilt = join_pages(first, [json.loads(b) for b in bodies[1:]])
    if isinstance(first, list):  # cut as JSON (a text cut is joined as text below)
        assert rebuilt == value
    else:  # pragma: no cover - a JSON list is cut as JSON
        raise AssertionError(bodies[0])
    assert json.dumps(value) == content  # the tool's output was not modified
