"""`ToolBudget`: LlamaIndex tools whose every output the LLM reads is within a token budget,
the rest served in pages by a continuation tool that join back to the exact output.

How the held output reaches the next call: a LlamaIndex agent (FunctionAgent, ReActAgent,
AgentWorkflow) passes its workflow `Context` to a `FunctionTool` whose `requires_context` is
set, under the tool's `ctx_param_name` (`BaseWorkflowAgent._call_tool`). The wrapped tools and
the continuation tool are such tools: a cut output is kept in the Context's state
(`ctx.store`, plain JSON values, so `ctx.to_dict()` keeps it), where the continuation tool
finds it on the next call of the run, and of a later run on the same Context. Called without
a Context (a plain `tool.call(...)`, or the sync path: the Context's store is async only), the
output is kept in the budget's own bounded in-memory `PageCache` instead.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable, Sequence
from typing import Any

from llama_index.core.base.llms.types import TextBlock
from llama_index.core.instrumentation import get_dispatcher  # type: ignore[attr-defined]
from llama_index.core.instrumentation.events import BaseEvent
from llama_index.core.llms import LLM
from llama_index.core.tools import BaseTool, FunctionTool, ToolMetadata, ToolOutput
from llama_index.core.tools.types import AsyncBaseTool
from llama_index.core.workflow import Context
from pydantic import BaseModel, ConfigDict, Field

from ragbudget import TokenCounter, TruncationInfo, get_counter
from ragbudget.exact import default_spec
from ragbudget.pages import (
    BudgetSize,
    PageCache,
    Remainder,
    budget_tokens,
    dumps,
    first_page_with_notice,
    next_page_with_notice,
    parse_json,
    read_size,
)
from ragbudget.pages.reading import CONTINUATION_DESCRIPTION

logger = logging.getLogger(__name__)
dispatcher = get_dispatcher(__name__)


class ToolBudgetEvent(BaseEvent):
    """A tool output cut to fit the budget, as LlamaIndex's instrumentation reports it.

    Dispatched through `get_dispatcher("llama_index.tools.ragbudget.base")`, which propagates
    to the root dispatcher (`get_dispatcher().add_event_handler(handler)` sees it), as the
    postprocessor's `TokenBudgetEvent` is: `info` is the same `ragbudget.TruncationInfo`."""

    info: TruncationInfo = Field(
        description="The cut: the tool's name in cut_ids, the tokens kept."
    )
    tool_name: str = Field(description="The tool whose output was cut.")
    handle: str = Field(description="What `read_more(handle=...)` continues with.")

    @classmethod
    def class_name(cls) -> str:
        return "ToolBudgetEvent"


DEFAULT_CONTINUATION_TOOL = "read_more"
"""The continuation tool's name unless `continuation_tool=` gives another."""

CONTEXT_PARAM = "ragbudget_ctx"
"""The keyword under which the agent passes its workflow Context to the budget's tools (the
tools' `ctx_param_name`); never part of a tool's schema, so the LLM never sees it."""

RESULTS_KEY = "ragbudget_results"
"""Context state: handle -> the whole output that was cut (`root`, `walls`, `tool`), or None
once read to the end or dropped."""

CURSORS_KEY = "ragbudget_cursors"
"""Context state: handle -> where its walk stands (`segments`, `offset`), or None."""


class ReadMoreInput(BaseModel):
    """The continuation tool's arguments, as the LLM sees them."""

    model_config = ConfigDict(extra="forbid")

    handle: str = Field(
        description="The handle a cut tool output's notice gives.", min_length=1, max_length=64
    )


def _budget(max_tokens: BudgetSize, llm: LLM | None) -> int:
    """`max_tokens` as tokens: an int, `("tokens", n)`, or `("fraction", f)` of `llm`'s
    `metadata.context_window`."""
    missing = (
        "max_tokens=('fraction', ...) needs the LLM's context window: pass llm=<the agent's "
        "LLM> (its metadata.context_window is read), or give max_tokens in tokens"
    )
    window = None if llm is None else llm.metadata.context_window
    return budget_tokens(max_tokens, window, missing)


def _int_at_least(name: str, value: Any, least: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        msg = f"{name} must be an int >= {least}, got {value!r}"
        raise ValueError(msg)
    return value


def _text(output: ToolOutput) -> str | None:
    """What the LLM reads of `output` when it is text only (its `content`: the text blocks
    joined by newlines); None when it holds images, audio or documents (left as they are)."""
    if not all(isinstance(block, TextBlock) for block in output.blocks):
        return None
    return output.content


def _json_value(text: str, raw_output: Any) -> tuple[str, Any]:
    """The text to cut and the JSON value it holds (None: cut as text). A tool that returns a
    list or dict reaches the LLM as its `str()` (FunctionTool's rendering), which is not JSON:
    such an output is cut as the JSON of that value (a fresh copy), so every page parses."""
    value = parse_json(text)
    if value is not None or not isinstance(raw_output, (list, dict)) or text != str(raw_output):
        return text, value
    try:
        rendered = dumps(raw_output)
    except (TypeError, ValueError):  # not JSON data: cut its rendering as text
        return text, None
    return rendered, json.loads(rendered)


def _as_tool(tool: BaseTool | Callable[..., Any]) -> BaseTool:
    if isinstance(tool, BaseTool):
        return tool
    if callable(tool):
        return FunctionTool.from_defaults(tool)  # as the agents convert a plain function
    msg = f"tools must hold LlamaIndex tools or functions, got {tool!r}"
    raise TypeError(msg)


class BudgetedTool(FunctionTool):
    """A tool whose output the LLM reads within its `ToolBudget`: the wrapped tool's metadata
    (name, description, fn_schema, return_direct), its call, and its output cut when over."""

    def __init__(self, tool: BaseTool, budget: ToolBudget) -> None:
        super().__init__(fn=self.call, async_fn=self.acall, metadata=tool.metadata)
        self.tool = tool
        self.budget = budget
        # The agent passes its Context to a FunctionTool that asks for one, by this keyword.
        self.requires_context = True
        self.ctx_param_name = CONTEXT_PARAM

    def _inner_kwargs(self, kwargs: dict[str, Any]) -> tuple[dict[str, Any], Context | None]:
        ctx = kwargs.pop(CONTEXT_PARAM, None)
        inner = self.tool
        name = inner.ctx_param_name if isinstance(inner, FunctionTool) else None
        if name is not None and ctx is not None:  # the wrapped tool asks for the Context too
            kwargs[name] = ctx
        return kwargs, ctx

    def call(self, *args: Any, **kwargs: Any) -> ToolOutput:
        """Call the tool; an output over the budget comes back as its first page and a
        notice, the rest held in the budget's in-memory cache (the Context's store is async)."""
        kwargs, _ = self._inner_kwargs(dict(kwargs))
        tool = self.tool
        output = (
            tool.call(*args, **kwargs) if isinstance(tool, AsyncBaseTool) else tool(*args, **kwargs)
        )
        cut = self.budget._cut(output)
        if cut is None:
            return output
        budgeted, handle, kept = cut
        self.budget._hold(handle, kept)
        return budgeted

    async def acall(self, *args: Any, **kwargs: Any) -> ToolOutput:
        """The async twin of `call`; the rest held in the workflow Context's state when the
        agent passes its Context, else in the budget's in-memory cache. Counting runs in a
        worker thread."""
        kwargs, ctx = self._inner_kwargs(dict(kwargs))
        tool = self.tool
        if isinstance(tool, AsyncBaseTool):
            output = await tool.acall(*args, **kwargs)
        else:  # as LlamaIndex's own adapter runs a sync tool
            output = await asyncio.to_thread(tool, *args, **kwargs)
        cut = await asyncio.to_thread(self.budget._cut, output)
        if cut is None:
            return output
        budgeted, handle, kept = cut
        if ctx is None:
            self.budget._hold(handle, kept)
        else:
            await self.budget._ahold(ctx, handle, kept)
        return budgeted


class ContinuationTool(FunctionTool):
    """`read_more(handle)`: the next page of a cut output, within the same budget."""

    def __init__(self, budget: ToolBudget) -> None:
        metadata = ToolMetadata(
            name=budget.continuation_tool,
            description=CONTINUATION_DESCRIPTION,
            fn_schema=ReadMoreInput,
        )
        super().__init__(fn=self.call, async_fn=self.acall, metadata=metadata)
        self.budget = budget
        self.requires_context = True
        self.ctx_param_name = CONTEXT_PARAM

    def _output(self, handle: Any, content: str, *, error: bool) -> ToolOutput:
        return ToolOutput(
            content=content,
            tool_name=self.budget.continuation_tool,
            raw_input={"kwargs": {"handle": handle}},
            raw_output=content,
            is_error=error,
        )

    def call(self, *args: Any, **kwargs: Any) -> ToolOutput:
        """The next page of the output held under `handle` in the budget's in-memory cache."""
        kwargs.pop(CONTEXT_PARAM, None)
        handle = self.budget._handle_arg(args, kwargs)
        if handle is None:
            return self._output(kwargs.get("handle"), self.budget._bad_handle(), error=True)
        held = self.budget._cache.get(handle)
        if held is None:
            return self._output(handle, self.budget._unknown(handle), error=True)
        content, cursor, error = self.budget._next_page(handle, held["result"], held["cursor"])
        if cursor is not None:
            held["cursor"] = cursor
        elif not error:
            self.budget._cache.discard(handle)  # read to the end: let it go
        return self._output(handle, content, error=error)

    async def acall(self, *args: Any, **kwargs: Any) -> ToolOutput:
        """The next page of the output held under `handle`: in the workflow Context's state
        when the agent passes its Context (the in-memory cache when the output was cut
        without one)."""
        ctx = kwargs.pop(CONTEXT_PARAM, None)
        if ctx is None:
            return await asyncio.to_thread(self.call, *args, **kwargs)
        handle = self.budget._handle_arg(args, kwargs)
        if handle is None:
            return self._output(kwargs.get("handle"), self.budget._bad_handle(), error=True)
        result = (await ctx.store.get(RESULTS_KEY, default=None) or {}).get(handle)
        cursor = (await ctx.store.get(CURSORS_KEY, default=None) or {}).get(handle)
        if result is None or cursor is None:
            return await asyncio.to_thread(self.call, handle=handle)
        content, following, error = await asyncio.to_thread(
            self.budget._next_page, handle, result, cursor
        )
        if following is not None:
            await ctx.store.set(f"{CURSORS_KEY}.{handle}", following)
        elif not error:  # read to the end: the state lets the output go
            await ctx.store.set(f"{RESULTS_KEY}.{handle}", None)
            await ctx.store.set(f"{CURSORS_KEY}.{handle}", None)
        return self._output(handle, content, error=error)


class ToolBudget:
    """Keeps every tool output a LlamaIndex agent's LLM reads within `max_tokens`; the rest
    in pages.

    `wrap(tools)` gives each tool back as a `BudgetedTool` (its name, description, schema and
    `return_direct` kept) and adds the continuation tool. An output within the budget is
    returned untouched (the tool's own `ToolOutput`). An output over it comes back as a copy
    whose content is the largest first page that fits with its notice: a text cut after a
    line, a JSON list or object (a tool that returns rows) shortened by trailing items at any
    depth, so the page still parses; `raw_output` stays the tool's own, for your code. The
    notice says what was kept of how much and names the call that reads on,
    `read_more(handle="...")`; each call returns the next page, within the same budget, until
    the last, and the pages join back to the exact output (`ragbudget.pages.join_pages`).

    The whole output is kept in the workflow Context's state (plain JSON values) when the
    agent passes its Context, which every LlamaIndex agent does; otherwise (a plain
    `tool.call`) in this budget's bounded in-memory cache.

    Setup:
        ```bash
        pip install llama-index-tools-ragbudget
        ```

    Key init args:
        max_tokens: the budget of each tool output the LLM reads, notice included: tokens
            (an int or `("tokens", n)`), or `("fraction", f)` of the LLM's context window,
            which needs `llm`.
        llm: the agent's LLM, read for `metadata.context_window` when `max_tokens` is a
            fraction.
        counter: a `ragbudget.get_counter` spec or a `TokenCounter`; None: `exact` (the larger
            of cl100k_base and o200k_base) where bpe-openai is installed, else the estimate.
        continuation_tool: the name of the tool that serves the next pages.
        max_results: how many cut outputs a Context (and the in-memory cache) keeps; the
            oldest goes first.
        cache_max_chars: the most characters the in-memory cache keeps in all.
        cache_ttl_seconds: how long the in-memory cache keeps an output not read.

    Instantiate:
        ```python
        from llama_index.tools.ragbudget import ToolBudget

        budget = ToolBudget(max_tokens=4_000)
        ```

    Use:
        ```python
        from llama_index.core.agent.workflow import FunctionAgent

        agent = FunctionAgent(tools=budget.wrap([grep]), llm=llm)
        response = await agent.run("Where is TODO used?")
        ```

    Sync (no workflow: the rest in the in-memory cache):
        ```python
        grep_tool, read_more = budget.wrap([grep])
        first = grep_tool.call(pattern="TODO")
        ```
    """

    def __init__(
        self,
        *,
        max_tokens: BudgetSize = 10_000,
        llm: LLM | None = None,
        counter: str | TokenCounter | None = None,
        continuation_tool: str = DEFAULT_CONTINUATION_TOOL,
        max_results: int = 32,
        cache_max_chars: int = 64_000_000,
        cache_ttl_seconds: float = 3_600.0,
    ) -> None:
        self.max_tokens = _budget(max_tokens, llm)
        if not isinstance(continuation_tool, str) or not continuation_tool.isidentifier():
            msg = (
                f"continuation_tool must be a tool name (an identifier), got {continuation_tool!r}"
            )
            raise ValueError(msg)
        self.continuation_tool = continuation_tool
        self.max_results = _int_at_least("max_results", max_results, 1)
        self._cache: PageCache[dict[str, Any]] = PageCache(
            max_entries=self.max_results,
            max_chars=_int_at_least("cache_max_chars", cache_max_chars, 0),
            ttl_seconds=cache_ttl_seconds,
            names={"ttl_seconds": "cache_ttl_seconds"},
        )
        self.counter: TokenCounter = (
            counter
            if counter is not None and not isinstance(counter, str)
            else get_counter(default_spec() if counter is None else counter)
        )
        self.continuation = ContinuationTool(self)
        """The continuation tool; `wrap` adds it to the tools it returns."""

    def wrap(self, tools: Sequence[BaseTool | Callable[..., Any]]) -> list[BaseTool]:
        """`tools` budgeted (plain functions become FunctionTools first, as an agent would
        make them), in order, followed by the continuation tool."""
        if isinstance(tools, (str, BaseTool)) or callable(tools):
            msg = f"tools must be a list of tools, got a single {tools!r}"
            raise TypeError(msg)
        wrapped: list[BaseTool] = []
        for tool in tools:
            own = _as_tool(tool)
            if own.metadata.name == self.continuation_tool:
                msg = (
                    f"tools has its own tool named {self.continuation_tool!r}, which the "
                    f"continuation tool would shadow: pass continuation_tool='<a free name>' "
                    f"(or rename the tool)"
                )
                raise ValueError(msg)
            wrapped.append(BudgetedTool(own, self))
        return [*wrapped, self.continuation]

    # -- cutting -------------------------------------------------------------------------

    def _call(self, handle: str) -> str:
        return f'{self.continuation_tool}(handle="{handle}")'

    def _cut(self, output: ToolOutput) -> tuple[ToolOutput, str, dict[str, Any]] | None:
        """A copy of `output` with the first page and its notice, the handle, and the whole
        output as plain JSON values (`result`, `cursor`); None when `output` is left as it is."""
        content = _text(output)
        if content is None or read_size(content, self.max_tokens, self.counter) <= self.max_tokens:
            return None
        text, value = _json_value(content, output.raw_output)
        handle = PageCache.new_handle()
        cut = first_page_with_notice(
            text, self.max_tokens, self.counter, self._call(handle), value=value,
            tool=output.tool_name,
        )  # fmt: skip
        if cut is None:  # pragma: no cover - only a counter far from additive gets here
            page = f"[ragbudget: result left out: no part of it fit {self.max_tokens:,} tokens]"
            return output.model_copy(update={"blocks": [TextBlock(text=page)]}), handle, {}
        page, remainder, used = cut
        kept = remainder.to_dict()
        held = {
            "result": {"root": kept["root"], "walls": kept["walls"], "tool": output.tool_name},
            "cursor": {"segments": kept["segments"], "offset": 0},
            "size": len(text),
            "nbytes": remainder.held_bytes(),
        }
        logger.debug("%s: output cut to %s tokens, handle %s", output.tool_name, used, handle)
        info = TruncationInfo.of(
            original_count=1, returned_count=1, dropped_ids=[], cut_ids=[output.tool_name],
            used_tokens=used, max_tokens=self.max_tokens, counter=self.counter,
        )  # fmt: skip
        dispatcher.event(ToolBudgetEvent(info=info, tool_name=output.tool_name, handle=handle))
        # A copy: the tool's own output (its raw_output, raw_input, is_error) is left as it is.
        return output.model_copy(update={"blocks": [TextBlock(text=page)]}), handle, held

    def _hold(self, handle: str, held: dict[str, Any]) -> None:
        if not held:  # pragma: no cover - see _cut
            return
        entry = {"result": held["result"], "cursor": held["cursor"]}
        if not self._cache.put(handle, entry, held["size"], nbytes=held["nbytes"]):
            logger.warning(
                "an output of %s characters is over cache_max_chars=%s: its pages cannot be "
                "served without a workflow Context",
                f"{held['size']:,}",
                f"{self._cache.max_chars:,}",
            )

    async def _ahold(self, ctx: Context, handle: str, held: dict[str, Any]) -> None:
        if not held:  # pragma: no cover - see _cut
            return
        kept = [
            old
            for old, value in (await ctx.store.get(RESULTS_KEY, default=None) or {}).items()
            if value is not None
        ]
        for old in kept[: max(0, len(kept) + 1 - self.max_results)]:
            await ctx.store.set(f"{RESULTS_KEY}.{old}", None)
            await ctx.store.set(f"{CURSORS_KEY}.{old}", None)
        await ctx.store.set(f"{RESULTS_KEY}.{handle}", held["result"])
        await ctx.store.set(f"{CURSORS_KEY}.{handle}", held["cursor"])

    # -- the continuation tool -------------------------------------------------------------

    @staticmethod
    def _handle_arg(args: tuple[Any, ...], kwargs: dict[str, Any]) -> str | None:
        if args:
            handle = args[0] if len(args) == 1 and not kwargs else None
        else:
            handle = kwargs["handle"] if set(kwargs) == {"handle"} else None
        return handle if isinstance(handle, str) and 0 < len(handle) <= 64 else None

    def _bad_handle(self) -> str:
        return (
            f'[ragbudget: {self.continuation_tool} takes one argument, handle="...": the '
            "handle a cut result's notice gives]"
        )

    def _unknown(self, handle: str) -> str:
        return (
            f"[ragbudget: handle {handle!r} is unknown, or its result was read to the end "
            f"or dropped (the {self.max_results} most recent cut results are kept): call "
            "the original tool again, with narrower arguments to get less]"
        )

    def _next_page(
        self, handle: str, result: dict[str, Any], cursor: dict[str, Any]
    ) -> tuple[str, dict[str, Any] | None, bool]:
        """The next page with its notice, the cursor after it (None: the last page), and
        whether it is an error."""
        found = next_page_with_notice(
            lambda: Remainder.from_dict({**result, "segments": cursor["segments"]}),
            cursor["offset"], self.max_tokens, self.counter, self._call(handle),
        )  # fmt: skip
        if found is None:  # pragma: no cover - only a counter far from additive gets here
            return (
                f"[ragbudget: no page of this result fits {self.max_tokens:,} tokens]",
                None,
                True,
            )
        content, page, remainder = found
        if page.next_offset is None:
            return content, None, False
        segments = remainder.to_dict()["segments"]
        return content, {"segments": segments, "offset": page.next_offset}, False


def budget_tools(
    tools: Sequence[BaseTool | Callable[..., Any]],
    max_tokens: BudgetSize = 10_000,
    counter: str | TokenCounter | None = None,
    continuation_tool: str = DEFAULT_CONTINUATION_TOOL,
    **kwargs: Any,
) -> list[BaseTool]:
    """`tools` budgeted and the continuation tool: `ToolBudget(...).wrap(tools)`; `kwargs`
    are `ToolBudget`'s other arguments (`llm`, `max_results`, ...).

    Use:
        ```python
        from llama_index.core.agent.workflow import FunctionAgent
        from llama_index.tools.ragbudget import budget_tools

        agent = FunctionAgent(tools=budget_tools([grep], max_tokens=4_000), llm=llm)
        ```
    """
    budget = ToolBudget(
        max_tokens=max_tokens, counter=counter, continuation_tool=continuation_tool, **kwargs
    )
    return budget.wrap(tools)
