"""`ragbudget guard` in front of the reference Node MCP servers from npm, driven by the official
`mcp` client: the filesystem server over stdio, the 'everything' server over streamable HTTP."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from guard_helpers import guard_params, pages, texts
from mcp import Client, StdioServerParameters
from node_servers import EVERYTHING, FILESYSTEM, entry_point
from processes import http_process, server_env
from ragbudget import get_counter
from ragbudget.limits import profile_for

pytestmark = [pytest.mark.node, pytest.mark.process]

COUNTER = "tiktoken:cl100k_base"
ITEMS = [{"id": i, "name": f"item {i}", "tags": ["a", "b"], "note": "ü" * 20} for i in range(1500)]
LOG = "".join(
    f"{i:05d} INFO request served in {i % 97} ms: GET /api/items?page={i}\n" for i in range(3000)
)


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("fs")
    (root / "items.json").write_text(json.dumps(ITEMS, indent=1), encoding="utf-8")
    (root / "server.log").write_text(LOG, encoding="utf-8")
    many = root / "many"
    many.mkdir()
    for i in range(2500):
        (many / f"file-{i:04d}.txt").touch()
    return root


def within_walls(result: Any, profile: str, max_tokens: int | None = None) -> None:
    """Every text block together within the client profile's walls (tokens by COUNTER)."""
    walls = profile_for(None, override=profile).walls()
    tokens = max_tokens if max_tokens is not None else walls.tokens
    blocks = texts(result)
    counter = get_counter(COUNTER)
    assert sum(counter.count(text) for text in blocks) <= tokens
    if walls.chars is not None:
        assert sum(len(text) for text in blocks) <= walls.chars
    if walls.bytes is not None:
        assert sum(len(text.encode()) for text in blocks) <= walls.bytes


def same_tools(direct: Any, guarded: Any) -> None:
    """The guarded list is the direct one plus `more`, each tool unchanged but for one line at
    the end of its description and no output schema (a cut result is text only)."""
    plain = {tool.name: tool for tool in direct.tools}
    wrapped = {tool.name: tool for tool in guarded.tools}
    assert set(wrapped) == {*plain, "more"}
    for name, tool in plain.items():
        other = wrapped[name]
        assert other.input_schema == tool.input_schema, name
        assert other.output_schema is None, name
        assert other.annotations == tool.annotations, name
        assert other.title == tool.title, name
        head, _, note = other.description.rpartition("\n\n")
        assert head == (tool.description or ""), name
        assert "\n" not in note and "`more`" in note, note


async def test_filesystem_over_stdio(npm_servers: Path, data: Path) -> None:
    server = ["node", str(entry_point(npm_servers, FILESYSTEM)), str(data)]
    direct = StdioServerParameters(command=server[0], args=server[1:], env=server_env())
    async with Client(direct) as plain:
        direct_tools = await plain.list_tools()
        whole_log = texts(
            await plain.call_tool("read_text_file", {"path": str(data / "server.log")})
        )
    assert whole_log == [LOG]

    options = ("--client", "copilot-cli", "--counter", COUNTER)
    async with Client(guard_params(server, *options)) as client:
        same_tools(direct_tools, await client.list_tools())

        # JSON: cut to valid JSON within 10 KB, its pages put back together exactly
        first = await client.call_tool("read_text_file", {"path": str(data / "items.json")})
        assert not first.is_error, texts(first)
        within_walls(first, "copilot-cli")
        kept = json.loads(texts(first)[0])
        assert kept == ITEMS[: len(kept)] and 0 < len(kept) < len(ITEMS)
        rest = [json.loads(body) for body in await pages(client, first)]
        assert kept + [item for page in rest for item in page["items"]] == ITEMS

        # text: whole lines within the walls, the pages rebuild the file byte for byte
        first = await client.call_tool("read_text_file", {"path": str(data / "server.log")})
        within_walls(first, "copilot-cli")
        assert texts(first)[0] + "".join(await pages(client, first)) == LOG

        # a small result passes untouched
        small = await client.call_tool("list_allowed_directories", {})
        assert len(texts(small)) == 1 and "ragbudget" not in texts(small)[0]


async def test_filesystem_directory_of_thousands_of_entries(npm_servers: Path, data: Path) -> None:
    server = ["node", str(entry_point(npm_servers, FILESYSTEM)), str(data)]
    direct = StdioServerParameters(command=server[0], args=server[1:], env=server_env())
    async with Client(direct) as plain:
        listing = texts(await plain.call_tool("list_directory", {"path": str(data / "many")}))[0]
    options = ("--max-tokens", "2000", "--counter", COUNTER)
    async with Client(guard_params(server, *options)) as client:
        first = await client.call_tool("list_directory", {"path": str(data / "many")})
        within_walls(first, "default", max_tokens=2000)
        assert texts(first)[0] + "".join(await pages(client, first)) == listing


@pytest.fixture(scope="module")
def everything_url(npm_servers: Path) -> Iterator[str]:
    """The 'everything' server over streamable HTTP on a free port (it reads PORT)."""
    node = shutil.which("node") or "node"
    script = str(entry_point(npm_servers, EVERYTHING))
    env = shutil.which("env") or "env"
    with http_process(
        lambda port: [env, f"PORT={port}", node, script, "streamableHttp"], server_env()
    ) as url:
        yield url


async def _unused(*_args: Any) -> Any:  # pragma: no cover - never called
    raise NotImplementedError


async def test_everything_over_http(everything_url: str) -> None:
    # The 'everything' server lists some tools only to clients that can answer sampling,
    # elicitation and roots requests; the guard says it can when its own client does, so
    # both clients say they can.
    relaying = {
        "sampling_callback": _unused,
        "elicitation_callback": _unused,
        "list_roots_callback": _unused,
    }
    async with Client(everything_url, **relaying) as plain:
        direct_tools = await plain.list_tools()
    message = LOG[:120_000]
    options = ("--url", everything_url, "--client", "codex", "--counter", COUNTER)
    async with Client(guard_params([], *options), **relaying) as client:
        same_tools(direct_tools, await client.list_tools())
        first = await client.call_tool("echo", {"message": message})
        assert not first.is_error, texts(first)
        within_walls(first, "codex")
        whole = texts(first)[0] + "".join(await pages(client, first))
        assert whole == f"Echo: {message}"
        small = await client.call_tool("echo", {"message": "hello"})
        assert texts(small) == ["Echo: hello"]


async def test_everything_under_a_client_that_declares_no_capabilities(everything_url: str) -> None:
    # Under a client with no sampling, elicitation or roots, the guard must not claim them for
    # it: the 'everything' server then lists the same tools as to that client directly, and
    # none that would fail with "no back-channel".
    async with Client(everything_url) as plain:
        direct_tools = await plain.list_tools()
    options = ("--url", everything_url, "--client", "codex", "--counter", COUNTER)
    async with Client(guard_params([], *options)) as client:
        same_tools(direct_tools, await client.list_tools())
