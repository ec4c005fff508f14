"""What a real pydantic-ai agent's model reads of our answers (issue 48).

pydantic-ai maps an MCP tool result to the tool return its model reads: the structured content
alone when there is any (`pydantic_ai.mcp._map_mcp_call_tool_result`), else the text blocks, a
lone block as its string. `ragbudget serve` answers with one text block and no structured
content, so the model reads the passages, the truncation notice and the cursor. A scripted
`FunctionModel` drives an `Agent` over `ragbudget serve` on stdio (`MCPToolset`): it searches
with a small budget, reads the cursor from the return it got, continues with it asking far more
than any wall (the server clamps it to the default profile's), and answers. What it was sent
is checked in the `ToolReturnPart`s as its `messages` held them, the way a provider adapter
renders them (`model_response_str`), and within `DEFAULT_PROFILE`'s walls by exact o200k and
cl100k counts, UTF-16 units, code points and UTF-8 bytes.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from mcp_helpers import COUNTER_SPEC, assert_within_walls, serve_stdio
from pydantic_ai import Agent
from pydantic_ai.mcp import MCPToolset
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from ragbudget.limits import DEFAULT_PROFILE
from ragbudget_server.store import DocumentStore

pytestmark = [pytest.mark.process]

FIRST = {
    "query": "wrap text paragraphs into lines of a given width",
    "limit": 40,
    "max_tokens": 600,
}
"""A search the small budget cuts (textwrap.py ranks first)."""

FINAL = "Read the passages and the continuation."

PATHS = re.compile(r"^\[Paths relative to (?P<root>.+)\]$", re.MULTILINE)
HEADER = re.compile(r"^\[(?P<rank>\d+)\] (?P<path>\S+):(?P<start>\d+)-(?P<end>\d+) ", re.MULTILINE)
NOTICE = re.compile(r"\[Showing results (?P<first>\d+)-(?P<last>\d+) of (?P<total>\d+) ")
CURSOR = re.compile(r'cursor="(?P<cursor>[^"]+)"')


def _returns(messages: list[ModelMessage]) -> list[ToolReturnPart]:
    """The tool returns in what the model is sent, in order."""
    return [
        part
        for message in messages
        if isinstance(message, ModelRequest)
        for part in message.parts
        if isinstance(part, ToolReturnPart)
    ]


def _scripted_model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Search; continue with the cursor the first return names; answer."""
    assert {tool.name for tool in info.function_tools} == {"search", "read_document", "stats"}
    returns = _returns(messages)
    if not returns:
        return ModelResponse(parts=[ToolCallPart("search", FIRST, tool_call_id="first")])
    if len(returns) == 1:
        match = CURSOR.search(returns[0].model_response_str())
        assert match is not None, "the model must read the cursor"
        following = {**FIRST, "max_tokens": 10**6, "cursor": match["cursor"]}
        return ModelResponse(parts=[ToolCallPart("search", following, tool_call_id="next")])
    return ModelResponse(parts=[TextPart(FINAL)])


def _passages(text: str) -> list[tuple[int, str]]:
    """The (rank, `path:start-end`) of each passage in `text`, after checking that the lines
    under each header are lines of that file (what the model reads is the file's text)."""
    paths = PATHS.search(text)
    assert paths is not None, text[:300]
    root = Path(paths["root"])
    headers = list(HEADER.finditer(text))
    found = []
    for header, following in zip(headers, [*headers[1:], None], strict=True):
        body = text[header.end() : following.start() if following else len(text)]
        lines = (root / header["path"]).read_text().splitlines()
        span = lines[int(header["start"]) - 1 : int(header["end"])]
        shown = [line for line in span if len(line.strip()) >= 8 and line in body]
        assert shown, f"no line of {header[0]!r} under its header"
        found.append((int(header["rank"]), f"{header['path']}:{header['start']}-{header['end']}"))
    return found


async def test_a_pydantic_ai_agent_reads_the_passages_notice_and_cursor(
    shared_store: DocumentStore, store_dir: Path, tmp_path: Path
) -> None:
    logs: list[Any] = []

    async def on_log(message: Any) -> None:  # fastmcp asks for every level; keep them quiet
        logs.append(message)

    transport = serve_stdio(
        "--db", str(store_dir), "--counter", COUNTER_SPEC, log_file=tmp_path / "stderr.log"
    )
    # pydantic-ai gives a server 5 s to start and answer `initialize`: a loaded machine takes
    # longer to start `ragbudget serve` (it failed so at a load average of 6)
    toolset: MCPToolset[None] = MCPToolset(transport, log_handler=on_log, init_timeout=120)
    agent = Agent(FunctionModel(_scripted_model), toolsets=[toolset])
    async with toolset:
        run = await agent.run("How does textwrap wrap a paragraph?")
        stats = await toolset.direct_call_tool("stats", {})
    assert run.output == FINAL
    # pydantic-ai sends no clientInfo name the server knows: the default profile's walls
    assert stats["client_profile"] == DEFAULT_PROFILE.name

    first, following = _returns(run.all_messages())
    for part in (first, following):
        assert part.tool_name == "search" and part.outcome == "success"
        # a str, not a dict: pydantic-ai would have sent the structured content alone
        assert isinstance(part.content, str), type(part.content)
        assert part.model_response_str() == part.content
        assert_within_walls(DEFAULT_PROFILE, part.content)

    passages = _passages(first.content)
    assert passages[0][0] == 1 and passages[0][1].startswith("textwrap.py:"), passages
    notice = NOTICE.search(first.content)
    assert notice is not None and int(notice["last"]) < int(notice["total"]), "the notice"
    assert CURSOR.search(first.content[notice.start() :]), "the notice names the cursor"

    # the continuation: the next ranks, no passage again, cut at one of the default walls
    next_passages = _passages(following.content)
    next_notice = NOTICE.search(following.content)
    assert next_notice is not None and int(next_notice["first"]) == int(notice["last"]) + 1
    assert next_passages[0][0] == int(notice["last"]) + 1, next_passages
    assert not {span for _, span in passages} & {span for _, span in next_passages}
    assert "clamped to 9,000 tokens (client profile default:" in following.content
    assert re.search(r"stopped at the (token|character|byte) wall", following.content)
