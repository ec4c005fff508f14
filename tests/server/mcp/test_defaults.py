"""`ragbudget serve` at its defaults: safe under Claude Code's limit, one counter per store.

The store is built as a new user builds it (the default estimate counter, the offline
embedding) over string-heavy code, the stdlib's `pydoc_data/topics.py`, where the estimate
under-counts JSON-escaped text the most. Whatever `max_tokens` is asked, in either format, the
model-visible text stays at most 14,500 tokens by exact cl100k and o200k: Claude Code's
25,000-token limit over ~1.7, the largest published inflation of Claude's tokenizers.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client
from mcp_helpers import listing_of, page_of, text_blocks, whole_answer
from mcp_types import Implementation
from ragbudget import get_counter
from ragbudget.counters import CLAUDE_FACTOR, ScaledCounter
from ragbudget_server.mcp import ServerSettings, create_server
from ragbudget_server.mcp.answers import SearchAnswer
from ragbudget_server.store import DocumentStore


@pytest.fixture(scope="module")
def default_db(stdlib: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("defaults") / "db"
    store = DocumentStore(path=db)  # the defaults: estimate counter, hashing embedding
    store.ingest([stdlib / "pydoc_data" / "topics.py", stdlib / "json"])
    store.close()
    return db


async def _call(
    db: Path, tool: str, args: dict[str, Any], client: str = "mcp", **settings: Any
) -> Any:
    info = Implementation(name=client, version="1")
    async with Client(create_server(ServerSettings(db=db, **settings)), client_info=info) as c:
        return await c.call_tool_mcp(tool, args)


@pytest.mark.parametrize("format", ["text", "json"])
@pytest.mark.parametrize("tool", ["search", "read_document"])
async def test_any_ask_stays_under_claude_codes_limit(
    default_db: Path, stdlib: Path, tool: str, format: str
) -> None:
    args: dict[str, Any] = {"max_tokens": 1_000_000, "format": format}
    if tool == "search":
        args |= {"query": "string literal escape sequences", "limit": 200}
    else:
        args |= {"source": str(stdlib / "pydoc_data" / "topics.py")}
    result = await _call(default_db, tool, args, client="claude-code")
    assert not result.is_error, text_blocks(result)
    visible = "\n".join(text_blocks(result))
    whole = whole_answer(result)  # one text block, no structured content
    for encoding in ("tiktoken:cl100k_base", "tiktoken:o200k_base"):
        assert get_counter(encoding).count(whole) <= 14_500, encoding
    assert len(whole) < 50_000  # Claude Code's save-to-file wall
    assert "clamped to 14,500 tokens" in visible and "claude-code" in visible


async def test_claude_counter_keeps_claude_codes_own_wall(default_db: Path, stdlib: Path) -> None:
    # With `--counter claude`, Claude Code's wall is its own 25,000 in the preset's tokens (under
    # the estimate's margin), not the 14,500 o200k-like wall counted in inflated tokens.
    args = {"source": str(stdlib / "pydoc_data" / "topics.py"), "max_tokens": 1_000_000}
    result = await _call(default_db, "read_document", args, client="claude-code", counter="claude")
    assert not result.is_error, text_blocks(result)
    whole = whole_answer(result)
    page = page_of(result)
    assert page["budget"]["max_tokens"] == 25_000, page["budget"]
    assert get_counter("claude").count(whole) <= 25_000
    assert len(whole) <= 48_000  # the characters wall binds first on this file
    assert len(whole) > 46_000, len(whole)  # not halved (about 24,000 characters before)


async def test_serve_counts_with_the_stores_own_counter(
    stdlib: Path, tmp_path: Path, default_db: Path
) -> None:
    db = tmp_path / "chars"
    DocumentStore(path=db, counter="chars:4").ingest([stdlib / "json" / "tool.py"])
    async with Client(create_server(ServerSettings(db=db))) as client:
        stats = listing_of(await client.call_tool("stats"))
    assert stats is not None
    assert stats["store"]["counter"] == "chars:4"
    assert stats["counter"] == "chars:4+10%"  # an estimate: the server's margin on top
    assert stats["max_tokens_ceiling"] == 14_500
    # With the claude preset, budgets are in Claude tokens: Claude Code's own 25,000.
    async with Client(create_server(ServerSettings(db=default_db, counter="claude"))) as client:
        stats = listing_of(await client.call_tool("stats"))
    assert stats is not None
    assert (stats["counter"], stats["max_tokens_ceiling"]) == ("claude+10%", 25_000)


def test_claude_preset_scales_the_estimate() -> None:
    claude, estimate = get_counter("claude"), get_counter("estimate")
    assert isinstance(claude, ScaledCounter) and not claude.exact
    for text in ("def f(x):\n    return x\n", "naïve café " * 40, "漢字かな交じり文" * 10, ""):
        assert claude.count(text) == math.ceil(estimate.count(text) * CLAUDE_FACTOR)
    with pytest.raises(ValueError, match="factor"):
        ScaledCounter(estimate, 0.5, "half")


async def test_text_answers_carry_results_verbatim_and_structured_content_without_them(
    default_db: Path,
) -> None:
    args = {"query": "operator precedence", "max_tokens": 1500, "limit": 20}
    result = await _call(default_db, "search", args)
    text = text_blocks(result)[-1]  # after the server's notice, when one was cut
    response = SearchAnswer.model_validate(page_of(result))
    assert response.results and response.format == "text"
    assert "text" not in response.results[0].model_dump()  # one copy: the text block's
    for r in response.results:
        assert f":{r.start_line}-{r.end_line}" in text
    assert response.budget.counter == "exact"  # bpe-openai is installed with the server
    counter = get_counter("exact")
    assert response.budget.text_tokens == sum(counter.count(b) for b in text_blocks(result))
    assert f'cursor="{response.next_cursor}"' in text and "--cursor" not in text


@pytest.mark.parametrize("format", ["text", "json"])
async def test_a_clamped_answer_states_one_budget(default_db: Path, format: str) -> None:
    # The ask (100,000), the clamp (9,000, said once in the server's line) and nothing else:
    # the page is fitted to less (room for that line) but states the whole answer's budget.
    args = {"query": "string literal escape sequences", "limit": 200, "max_tokens": 100_000}
    result = await _call(default_db, "search", {**args, "format": format}, client="codex")
    whole = whole_answer(result)
    assert whole.startswith("[max_tokens=100,000 clamped to 9,000 tokens")
    budgets = set(re.findall(r"\(([\d,]+)-token budget\)", whole))
    stated = set(re.findall(r'"max_tokens":(\d+)', whole))
    assert budgets <= {"9,000"} and stated <= {"9000"}, (budgets, stated)
    assert budgets or stated  # the page says its budget
