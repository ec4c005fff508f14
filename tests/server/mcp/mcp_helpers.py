"""Helpers for tests/server/mcp: what a client actually received, and how to launch the server."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from fastmcp.client.transports import StdioTransport
from mcp_types import TextContent
from processes import http_process, server_env
from ragbudget import TokenCounter, get_counter
from ragbudget.limits import ClientProfile, utf16_length

COUNTER_SPEC = "tiktoken:cl100k_base"
"""The exact counter every test server measures budgets with."""

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "raw-test", "version": "0"},
    },
}
"""A raw JSON-RPC `initialize` request, as a client's first message."""

HEADERS = {"Accept": "application/json, text/event-stream"}
"""What a streamable HTTP client must accept."""


def text_blocks(result: Any) -> list[str]:
    """The text content blocks of a tool result, in order (what the model reads)."""
    blocks = []
    for block in result.content:
        assert isinstance(block, TextContent), f"unexpected content block {block!r}"
        blocks.append(block.text)
    return blocks


def visible_tokens(result: Any, counter: TokenCounter) -> int:
    """Tokens of every text block a client got, counted one by one and summed."""
    return sum(counter.count(text) for text in text_blocks(result))


def serve_command() -> list[str]:
    """`ragbudget serve` as installed (the console script next to this interpreter)."""
    script = Path(sys.executable).with_name("ragbudget")
    if script.exists():
        return [str(script), "serve"]
    return [sys.executable, "-m", "ragbudget_server.mcp", "serve"]  # pragma: no cover


def serve_stdio(*args: str, log_file: Path | None = None) -> StdioTransport:
    """fastmcp's transport to `ragbudget serve ARGS` over stdio, one process per client
    session, the server's stderr into `log_file`."""
    command = serve_command()
    return StdioTransport(
        command=command[0],
        args=[*command[1:], *args],
        env=server_env(),
        keep_alive=False,
        log_file=log_file,
    )


@contextmanager
def http_server(
    args: list[str], env: dict[str, str], stderr: IO[bytes] | int = subprocess.PIPE
) -> Iterator[str]:
    """`ragbudget serve --transport http ARGS` on a free loopback port: yields its /mcp URL."""
    with http_process(
        lambda port: [*serve_command(), *args, "--transport", "http", "--port", str(port)],
        env,
        stderr,
    ) as url:
        yield url


def page_of(result: Any) -> dict[str, Any]:
    """A `search`/`read_document` answer's page fields, as programs read them: its
    `_meta["ragbudget"]` (a fastmcp or `mcp` client's result, or a raw JSON-RPC result)."""
    meta = getattr(result, "meta", None)
    if meta is None and isinstance(result, dict):
        meta = result.get("_meta")
    assert isinstance(meta, dict) and "ragbudget" in meta, f"no _meta.ragbudget in {result!r}"
    page: dict[str, Any] = meta["ragbudget"]
    return page


def listing_of(result: Any) -> dict[str, Any]:
    """A `stats`/`ingest` answer as programs read it: its one text block's JSON."""
    (text,) = text_blocks(result)
    value: dict[str, Any] = json.loads(text)
    return value


def whole_answer(result: Any) -> str:
    """Everything a client may show a model: the text blocks, then the structured content
    serialized as compact JSON (as the wire carries it), when there is any."""
    if hasattr(result, "structured_content"):
        structured = result.structured_content
    else:
        structured = getattr(result, "structuredContent", None)
    blocks = text_blocks(result)
    if structured is not None:
        blocks.append(json.dumps(structured, ensure_ascii=False, separators=(",", ":")))
    return "\n".join(blocks)


RULES = ("text", "structured", "both")
"""What a client gives its model of a tool result: the text blocks only (Gemini CLI), the
structured content as `JSON.stringify` writes it when there is any, else the text (Claude Code,
Codex, VS Code, Cursor, pydantic-ai), or both."""


def model_view(result: Any, rule: str) -> str:
    """What a client following `rule` (one of `RULES`) shows its model of `result`."""
    texts = "\n".join(text_blocks(result))
    if hasattr(result, "structured_content"):
        structured = result.structured_content
    else:
        structured = result.get("structuredContent") if isinstance(result, dict) else None
    wire = None
    if structured is not None:
        wire = json.dumps(structured, ensure_ascii=False, separators=(",", ":"))
    if rule == "text" or wire is None:
        return texts
    return wire if rule == "structured" else f"{texts}\n{wire}"


def assert_model_reads_the_answer(result: Any, view: str) -> None:
    """`view` (a `model_view` of a `search` or `read_document` answer) holds the passages the
    text holds, every result's lines, and, when the answer stops early, its notice and the
    cursor or offset that continues."""
    (text,) = text_blocks(result)
    assert text in view, "the model must read the passages"
    page = page_of(result)
    json_format = page["format"] == "json"
    for ref in page.get("results", ()):
        lines = f'"start_line":{ref["start_line"]}' if json_format else f":{ref['start_line']}-"
        assert lines in view, ref
    if page.get("next_cursor"):
        assert page["next_cursor"] in view and "[Showing results" in view
    elif page.get("next_offset") is not None and "results" not in page:
        offset = page["next_offset"]
        assert (f'"next_offset":{offset}' if json_format else f"offset={offset}") in view


def assert_within_walls(profile: ClientProfile, whole: str) -> None:
    """`whole` (an answer as `whole_answer` gives it) within `profile`'s walls, by the real
    tokenizers (exact o200k and cl100k), characters (UTF-16 units and code points) and bytes."""
    tokens = profile.walls().tokens
    for spec in ("tiktoken:o200k_base", "tiktoken:cl100k_base"):
        assert get_counter(spec).count(whole) <= tokens, (profile.name, spec)
    if profile.chars is not None:
        assert utf16_length(whole) <= profile.chars and len(whole) <= profile.chars
    if profile.bytes is not None:
        assert len(whole.encode()) <= profile.bytes, (profile.name, len(whole.encode()))
