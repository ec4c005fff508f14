"""HTTP transport hardening: forged Host/Origin refused before a session, blank tokens, logs.

Raw requests (httpx) against a real `ragbudget serve --transport http` on 127.0.0.1: the
DNS-rebinding attack is a request whose `Host` (or `Origin`) names a foreign site.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport
from mcp_helpers import COUNTER_SPEC, HEADERS, INITIALIZE, http_server
from processes import server_env
from ragbudget.text import shown
from ragbudget_server.store import DocumentStore

pytestmark = pytest.mark.process

TOKEN = "sec-token-9876543210"


class Served:
    """A running server: its URL and the file its stderr goes to."""

    def __init__(self, url: str, log: Path) -> None:
        self.url = url
        self.log = log

    def post(self, **headers: str) -> httpx.Response:
        merged = {**HEADERS, **{k.replace("_", "-"): v for k, v in headers.items()}}
        return httpx.post(self.url, json=INITIALIZE, headers=merged, timeout=60)

    def stderr(self) -> str:
        return self.log.read_text(errors="replace")


def _serve(store_dir: Path, log: Path, *extra: str, token: str | None = None) -> Iterator[Served]:
    env = server_env()
    if token is not None:
        env["RAGBUDGET_AUTH_TOKEN"] = token
    args = ["--db", str(store_dir), "--counter", COUNTER_SPEC, *extra]
    with log.open("wb") as sink, http_server(args, env, stderr=sink) as url:
        yield Served(url, log)


@pytest.fixture(scope="module")
def open_server(
    shared_store: DocumentStore, store_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Served]:
    """No token (the documented loopback setup), one extra host and one extra origin."""
    log = tmp_path_factory.mktemp("http-open") / "stderr.log"
    extra = ["--allow-host", "good.example", "--allow-origin", "https://app.example"]
    yield from _serve(store_dir, log, *extra)


@pytest.fixture(scope="module")
def token_server(
    shared_store: DocumentStore, store_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Served]:
    log = tmp_path_factory.mktemp("http-token") / "stderr.log"
    yield from _serve(store_dir, log, token=TOKEN)


def _port(url: str) -> str:
    return url.rsplit(":", 1)[1].split("/")[0]


# Issue 52: fastmcp compares only what comes before a ':' or inside '[...]', so each of these
# passed as loopback (or as the allowed good.example) before `StrictHost`.
MALFORMED_HOSTS = [
    "127.0.0.1:{port}@evil.example",  # after the ':', anything: user info,
    "localhost:evil.example",  # a name instead of a port,
    "127.0.0.1:99999",  # a port out of range,
    "good.example:1@evil.example",
    "[::1]evil.example",  # after the ']', anything,
    "[::1]:{port}@evil.example",
    "[localhost]",  # brackets around a name, not an IPv6 address,
    "[127.0.0.1]:{port}",
    "::1",  # an IPv6 address without its brackets
    "localhost.",  # an empty label (fastmcp refused this one already)
]


@pytest.mark.parametrize(
    "host",
    [
        "evil.example",
        "attacker.example:{port}",
        "127.0.0.1.evil.example",
        "0.0.0.0",
        *MALFORMED_HOSTS,
    ],
)
def test_a_foreign_or_malformed_host_is_refused_before_any_session(
    open_server: Served, host: str
) -> None:
    host = host.format(port=_port(open_server.url))
    response = open_server.post(host=host)
    assert response.status_code == 421
    assert response.text == "Misdirected Request"
    assert "mcp-session-id" not in response.headers
    assert f"HTTP 421: Host {shown(host)} is not allowed" in open_server.stderr()


def test_two_host_headers_are_refused(open_server: Served) -> None:
    """A raw request (httpx refuses to send two): the loopback one first, the foreign one
    second, which a proxy in front may take."""
    split = urlsplit(open_server.url)
    body = json.dumps(INITIALIZE).encode()
    request = (
        f"POST {split.path} HTTP/1.1\r\nHost: 127.0.0.1:{split.port}\r\nHost: evil.example\r\n"
        f"Accept: {HEADERS['Accept']}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    ).encode() + body
    with socket.create_connection((split.hostname, split.port), timeout=60) as conn:
        conn.sendall(request)
        answer = b""
        while chunk := conn.recv(65536):
            answer += chunk
    status_line, _, rest = answer.partition(b"\r\n")
    assert status_line.split()[1] in (b"400", b"421"), status_line
    assert b"mcp-session-id" not in rest.lower()


@pytest.mark.parametrize(
    "origin", ["http://evil.example", "https://evil.example:443", "null", "http://localhost.evil"]
)
def test_a_foreign_origin_is_refused_before_any_session(open_server: Served, origin: str) -> None:
    response = open_server.post(origin=origin)
    assert response.status_code == 403
    assert response.text == "Forbidden Origin"
    assert "mcp-session-id" not in response.headers
    assert f"HTTP 403: Origin {origin!r} is not allowed" in open_server.stderr()


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"host": "localhost:{port}"},
        {"host": "[::1]:{port}"},
        {"host": "good.example"},
        {"host": "LOCALHOST:{port}"},
        {"host": "localhost:9000"},  # a tunnel's port (ssh -L 9000:localhost:PORT)
        {"origin": "http://localhost:5173"},
        {"origin": "http://127.0.0.1:{port}"},
        {"origin": "https://app.example"},
        {"host": "good.example:{port}", "origin": "http://good.example:{port}"},
    ],
)
def test_loopback_and_allowed_names_are_served(
    open_server: Served, headers: dict[str, str]
) -> None:
    port = _port(open_server.url)
    response = open_server.post(**{k: v.format(port=port) for k, v in headers.items()})
    assert response.status_code == 200, response.text
    assert response.headers.get("mcp-session-id")


def test_a_huge_forged_host_is_logged_shortened(open_server: Served) -> None:
    host = "x" * 3000 + ".example"
    assert open_server.post(host=host).status_code == 421
    log = open_server.stderr()
    assert shown(host) in log
    assert host not in log


async def test_the_server_keeps_serving_after_refusals(open_server: Served) -> None:
    for _ in range(5):
        assert open_server.post(host="evil.example").status_code == 421
        assert open_server.post(origin="http://evil.example").status_code == 403
    async with Client(StreamableHttpTransport(open_server.url)) as client:
        result = await client.call_tool_mcp("search", {"query": "json", "max_tokens": 500})
    assert not result.is_error, result


def test_the_host_check_comes_before_the_token(token_server: Served) -> None:
    assert token_server.post(host="evil.example").status_code == 421
    authorized = {"authorization": f"Bearer {TOKEN}"}
    assert token_server.post(host="evil.example", **authorized).status_code == 421
    assert token_server.post(origin="http://evil.example", **authorized).status_code == 403
    assert token_server.post(**authorized).status_code == 200


@pytest.mark.parametrize("authorization", [None, "Bearer not-the-token-424242", f"Basic {TOKEN}"])
def test_auth_failures_are_logged_without_the_token(
    token_server: Served, authorization: str | None
) -> None:
    headers = {} if authorization is None else {"authorization": authorization}
    assert token_server.post(**headers).status_code == 401
    log = token_server.stderr()
    assert "WARNING" in log
    assert "HTTP 401: no valid bearer token" in log
    assert "not-the-token-424242" not in log
    assert TOKEN not in log
