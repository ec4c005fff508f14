"""What `ragbudget guard` passes between its client and the wrapped server besides calls: a
cancellation, the notice that the server's tools changed, the capabilities the client has."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import mcp_types as mt
import pytest
from guard_helpers import FAKE, guard_params, texts
from mcp import Client
from processes import server_env

pytestmark = pytest.mark.process

FAKE_SERVER = [sys.executable, str(FAKE)]


async def _unused(*_args: Any) -> Any:  # pragma: no cover - never called
    raise NotImplementedError


async def test_a_cancelled_call_is_cancelled_on_the_wrapped_server(tmp_path: Path) -> None:
    record = tmp_path / "cancelled.jsonl"
    env = {**server_env(), "FAKE_RECORD": str(record)}
    async with Client(guard_params(FAKE_SERVER, env=env)) as client:
        with anyio.move_on_after(2) as scope:
            await client.call_tool("wait", {})
        assert scope.cancelled_caught, "the wrapped server answered 'wait'"
        deadline = time.monotonic() + 10
        while not record.exists() and time.monotonic() < deadline:
            await anyio.sleep(0.1)
        # the session goes on: the next call is answered
        assert texts(await client.call_tool("echo", {"text": "after"})) == ["after"]
    assert record.exists(), "the wrapped server never got notifications/cancelled"
    cancelled = [json.loads(line) for line in record.read_text().splitlines()]
    assert len(cancelled) == 1 and "requestId" in cancelled[0], cancelled


async def test_a_change_of_tools_is_relayed_and_the_list_keeps_more() -> None:
    # Relayed to a client of the handshake era; at 2026-07-28 change notices travel only on a
    # `subscriptions/listen` stream, which fastmcp does not serve (docs/guard.md, Limits).
    changes: list[str] = []

    async def notes(message: Any) -> None:
        if isinstance(message, mt.ToolListChangedNotification):
            changes.append(message.method)

    async with Client(guard_params(FAKE_SERVER), message_handler=notes, mode="legacy") as client:
        before = {tool.name for tool in (await client.list_tools()).tools}
        assert {"grow", "more"} <= before
        grown = texts(await client.call_tool("grow", {}))[0]
        deadline = time.monotonic() + 10
        while not changes and time.monotonic() < deadline:
            await anyio.sleep(0.05)
        assert changes == ["notifications/tools/list_changed"]
        after = {tool.name for tool in (await client.list_tools()).tools}
        assert after == {*before, grown}
        called = await client.call_tool(grown, {"text": "new tool"})
    assert not called.is_error and texts(called) == ["new tool"]


async def test_a_new_tool_can_be_called_before_the_client_lists_again() -> None:
    async with Client(guard_params(FAKE_SERVER)) as client:
        await client.list_tools()
        grown = texts(await client.call_tool("grow", {}))[0]
        called = await client.call_tool(grown, {"text": "at once"})
    assert not called.is_error and texts(called) == ["at once"]


async def test_the_wrapped_server_sees_only_what_the_client_supports() -> None:
    async with Client(guard_params(FAKE_SERVER)) as plain:
        bare = json.loads(texts(await plain.call_tool("capabilities", {}))[0])
    assert not {"sampling", "elicitation", "roots"} & set(bare), bare

    async with Client(guard_params(FAKE_SERVER), sampling_callback=_unused) as sampling:
        some = json.loads(texts(await sampling.call_tool("capabilities", {}))[0])
    assert "sampling" in some and not {"elicitation", "roots"} & set(some), some

    every = {
        "sampling_callback": _unused,
        "elicitation_callback": _unused,
        "list_roots_callback": _unused,
    }
    async with Client(guard_params(FAKE_SERVER), **every) as full:
        caps = json.loads(texts(await full.call_tool("capabilities", {}))[0])
    assert {"sampling", "elicitation", "roots"} <= set(caps), caps
