"""Result shapes the third party's server does not return: the guard called directly."""

from __future__ import annotations

import json
from typing import Any

from fastmcp.tools import ToolResult
from mcp_types import EmbeddedResource, TextContent, TextResourceContents
from middleware_helpers import next_call, texts
from ragbudget import TokenCounter
from ragbudget.middleware import TokenBudgetMiddleware
from ragbudget.pages.json_trim import dumps
from ragbudget.pages.remainder import join_pages

LINES = "".join(f"row {i}: value {i * 7}\n" for i in range(3000))


def _pages(
    middleware: TokenBudgetMiddleware, first: ToolResult, counter: TokenCounter
) -> list[str]:
    call, bodies = next_call(texts(first)[-1]), []
    while call is not None:
        page = middleware.page(*call)
        assert sum(counter.count(text) for text in texts(page)) <= middleware.max_tokens
        body, notice = texts(page)
        bodies.append(body)
        call = next_call(notice)
    return bodies


def test_structured_content_of_its_own_follows_the_text_when_cut(
    exact_counter: TokenCounter,
) -> None:
    structured = {"rows": [{"n": i, "label": f"row {i}"} for i in range(3000)], "total": 3000}
    result = ToolResult(
        content=[TextContent(type="text", text=LINES)], structured_content=structured
    )
    middleware = TokenBudgetMiddleware(600, counter=exact_counter)
    cut = middleware.guard.cut(result, 600, "rows").result
    assert cut.structured_content is None  # text only: every client forwards its text
    assert result.structured_content == structured  # the tool's result is not changed
    walked = texts(cut)[0] + "".join(_pages(middleware, cut, exact_counter))
    assert walked == LINES + "\n\n" + dumps(structured)  # what each field held, once


def test_a_short_text_stays_whole_beside_its_structured_content_cut_as_json(
    exact_counter: TokenCounter,
) -> None:
    structured = {"rows": [{"n": i, "label": f"row {i}"} for i in range(3000)], "total": 3000}
    result = ToolResult(
        content=[TextContent(type="text", text="3,000 rows")], structured_content=structured
    )
    cut = TokenBudgetMiddleware(600, counter=exact_counter).guard.cut(result, 600, "t").result
    lead, body, notice = texts(cut)
    assert lead == "3,000 rows" and cut.structured_content is None
    shown = json.loads(body)
    assert shown["total"] == 3000 and shown["rows"] == structured["rows"][: len(shown["rows"])]
    assert "more(handle=" in notice


def test_an_error_result_stays_an_error(exact_counter: TokenCounter) -> None:
    result = ToolResult(content=[TextContent(type="text", text=LINES)], is_error=True)
    cut = TokenBudgetMiddleware(600, counter=exact_counter).guard.cut(result, 600, "t")
    assert cut.result.is_error
    assert LINES.startswith(texts(cut.result)[0])


def test_a_large_embedded_resource_is_replaced_by_a_note(exact_counter: TokenCounter) -> None:
    resource = EmbeddedResource(
        type="resource",
        resource=TextResourceContents(uri="file:///big.txt", mime_type="text/plain", text=LINES),
    )
    result = ToolResult(content=[TextContent(type="text", text="see attached"), resource])
    middleware = TokenBudgetMiddleware(600, counter=exact_counter)
    assert not middleware.guard.within(result, 600)
    cut = middleware.guard.cut(result, 600, "t").result
    assert texts(cut)[0] == "see attached"
    assert "embedded resource file:///big.txt" in texts(cut)[1]
    assert len(cut.content) == 2


def test_items_each_over_a_page_are_shortened_and_still_join_back(
    exact_counter: TokenCounter,
) -> None:
    value: list[Any] = [{"name": f"doc {i}", "body": LINES} for i in range(3)]
    result = ToolResult(
        content=[TextContent(type="text", text=dumps(value))], structured_content={"result": value}
    )
    middleware = TokenBudgetMiddleware(800, counter=exact_counter)
    cut = middleware.guard.cut(result, 800, "docs").result
    first = json.loads(texts(cut)[0])
    assert first[0]["name"] == "doc 0" and LINES.startswith(first[0]["body"])
    assert first[0]["body"].endswith("\n")  # strings inside JSON are cut after a line too
    pages = [json.loads(body) for body in _pages(middleware, cut, exact_counter)]
    assert join_pages(first, pages) == value
