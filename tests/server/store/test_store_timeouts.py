"""A Chroma server that accepts connections and never answers: one-line errors, never a hang.

Each test waits at most a fraction of a second per request (the timeouts it sets).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from ragbudget_server.cli import app
from ragbudget_server.store import DocumentStore, StoreError
from ragbudget_server.store.remote import server_errors
from typer.testing import CliRunner


def _read_timeout_message(url: str, seconds: float) -> str:
    return (
        f"the Chroma server at {url} did not answer within {seconds:g} s (read timeout); "
        "check that it is up and not overloaded, or raise --read-timeout"
    )


def test_opening_a_silent_server_is_a_read_timeout(silent_server: str) -> None:
    with pytest.raises(StoreError) as caught:
        DocumentStore(server=silent_server, path=None, read_timeout=0.3)
    assert str(caught.value) == _read_timeout_message(silent_server, 0.3)


@pytest.mark.parametrize("name", ["connect_timeout", "read_timeout"])
@pytest.mark.parametrize("value", [0, -1, float("nan"), float("inf"), 7200, "10"])
def test_bad_timeouts_are_refused(name: str, value: object) -> None:
    with pytest.raises(StoreError, match=f"^{name} must be"):
        DocumentStore(server="http://127.0.0.1:9", path=None, **{name: value})  # type: ignore[arg-type]


def test_a_connect_timeout_names_its_option() -> None:
    with pytest.raises(StoreError) as caught, server_errors("http://10.0.0.1:8000", 2.5, 30):
        raise httpx.ConnectTimeout("timed out")
    assert str(caught.value) == (
        "the Chroma server at http://10.0.0.1:8000 did not accept a connection within 2.5 s "
        "(connect timeout); check that it is up and reachable, or raise --connect-timeout"
    )


def test_a_refused_connection_is_one_line() -> None:
    with pytest.raises(
        StoreError, match=r"^cannot reach the Chroma server at http://127\.0\.0\.1:9"
    ):
        DocumentStore(server="http://127.0.0.1:9", path=None, connect_timeout=1)


def test_other_errors_keep_their_type() -> None:
    with pytest.raises(KeyError), server_errors("http://127.0.0.1:9", 1, 1):
        raise KeyError("not about the connection")
    with pytest.raises(httpx.ReadTimeout), server_errors(None, 1, 1):  # embedded: untouched
        raise httpx.ReadTimeout("x")


@pytest.mark.parametrize(
    ("args", "env"),
    [
        (["search", "retries", "--read-timeout", "0.3"], {}),
        (["stats"], {"RAGBUDGET_READ_TIMEOUT": "0.3"}),
        (["read", "notes.md", "--read-timeout", "0.3"], {}),
    ],
)
def test_the_cli_fails_in_one_line(
    silent_server: str, args: list[str], env: dict[str, str]
) -> None:
    result = CliRunner(env=env).invoke(app, [*args, "--server", silent_server])
    assert result.exit_code == 1, result.output
    shown = " ".join(result.stderr.split())  # rich wraps the one message at 80 columns
    assert shown == f"error: {_read_timeout_message(silent_server, 0.3)}"


@pytest.mark.server
def test_a_real_server_gets_the_timeouts_on_every_request(chroma_server: str) -> None:
    store = DocumentStore(server=chroma_server, path=None, connect_timeout=4, read_timeout=7)
    try:
        session = store._backend._connect(create=False)._server._session
        assert session.timeout == httpx.Timeout(7, connect=4)
    finally:
        store.close()


@pytest.mark.server
async def test_serve_opens_a_chroma_server_store_on_its_own(
    chroma_server: str, tmp_path: Path, make_store: Callable[..., DocumentStore]
) -> None:
    pytest.importorskip("fastmcp")
    from fastmcp import Client
    from ragbudget_server.mcp import ServerSettings, create_server

    (tmp_path / "notes.md").write_text("The quokka protocol retries three times.\n")
    store = DocumentStore(server=chroma_server, path=None, collection="serve-remote")
    store.ingest([tmp_path / "notes.md"])
    store.close()
    settings = ServerSettings(server=chroma_server, collection="serve-remote")
    async with Client(create_server(settings)) as client:
        result = await client.call_tool_mcp("search", {"query": "quokka", "max_tokens": 500})
        stats = await client.call_tool("stats", {})
    assert not result.is_error, result
    assert "quokka protocol" in result.content[-1].text  # the text, not the structured content
    assert json.loads(stats.content[0].text)["store"]["server"] == chroma_server
