"""`ragbudget guard` in front of tools that return 5,000 rows as structured content, with and
without an output schema, called as Codex: whichever field a client gives its model (the text
blocks, `JSON.stringify(structuredContent)` when present, or both), the model reads the cut's
notice and its `more` handle, within Codex's walls by exact o200k and cl100k and bytes; the
tools are listed without an output schema (a cut result no longer matches one), and walking
the handle gives back every row once, in order."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import mcp_types as mt
import pytest
from guard_helpers import guard_params, pages, texts
from mcp import Client
from ragbudget import get_counter
from ragbudget.limits import profile_for

pytestmark = pytest.mark.process

SERVER = [sys.executable, str(Path(__file__).with_name("structured_server.py"))]
RULES = ("text", "structured", "both")


def _view(result: Any, rule: str) -> str:
    text = "\n".join(texts(result))
    structured = result.structured_content
    if rule == "text" or structured is None:
        return text
    wire = json.dumps(structured, ensure_ascii=False, separators=(",", ":"))
    return wire if rule == "structured" else f"{text}\n{wire}"


async def test_a_cut_structured_result_tells_every_rule_what_is_missing() -> None:
    codex = profile_for("codex-mcp-client")
    walls = codex.walls()
    info = mt.Implementation(name="codex-mcp-client", version="1")
    params = guard_params(SERVER, "--counter", "tiktoken:cl100k_base")
    async with Client(params, client_info=info) as client:
        listed = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert listed["table"].output_schema is None and listed["raw_table"].output_schema is None
        rows_seen = {}
        for tool in ("table", "raw_table"):
            result = await client.call_tool(tool, {})
            assert not result.is_error, texts(result)
            for rule in RULES:
                view = _view(result, rule)
                assert "[ragbudget: cut to fit" in view and "more(handle=" in view, (tool, rule)
                for spec in ("tiktoken:o200k_base", "tiktoken:cl100k_base"):
                    assert get_counter(spec).count(view) <= walls.tokens, (tool, rule, spec)
                assert walls.bytes is not None and len(view.encode()) <= walls.bytes
            body = texts(result)[-2]  # the JSON page, before the notice
            rows = json.loads(body)["rows"]
            for page in await pages(client, result):
                rows += json.loads(page)["items"]
            rows_seen[tool] = rows
    assert texts(result)[0] == "5,000 rows"  # raw_table's own text, whole
    expected = [{"n": i, "label": f"row {i} of the table"} for i in range(5000)]
    assert rows_seen == {"table": expected, "raw_table": expected}
