"""What guards `ragbudget serve --transport http`: Host/Origin checks, the token, refusal logs.

A page in a browser can make requests to `http://127.0.0.1:8000` (DNS rebinding points a
foreign name at loopback; a cross-site `fetch` sends its own `Origin`). Two checks stop it
before any MCP session exists, whatever the bind address:

- the `Host` header must name a loopback host (`127.0.0.1`, `localhost`, `::1`), the bind
  address, or one given with `--allow-host` (fnmatch patterns such as `*.lan` work);
  otherwise HTTP 421;
- an `Origin` header, when present, must be a loopback origin on a loopback `Host`, the
  request's own origin (scheme and `Host`), or one given with `--allow-origin`;
  otherwise HTTP 403.

Both are fastmcp's `HostOriginGuardMiddleware` in strict mode (ragbudget turns it on; fastmcp
leaves it off by default), behind `StrictHost`: fastmcp compares only the part of `Host` before
a `:` or inside `[...]`, so it took `127.0.0.1:8000@evil.example`, `localhost:evil.example`,
`[::1]evil.example`, `[localhost]` and a bare `::1` for loopback (issue 52). `StrictHost`
first refuses (421) a request without exactly one `Host` header of the form `name[:port]` or
`[IPv6]:port` (RFC 9110: letters, digits, `.`, `-` and `_`; a port of 1-65535); the port is
not compared with the one served, so a tunnel (`ssh -L 9000:localhost:8000`) still works.

Every refusal (421, 403, and 401 from the bearer token check) is
logged at WARNING on stderr with the client address and, for 421/403, the refused header
shortened; the `Authorization` header is never logged.
"""

from __future__ import annotations

import ipaddress
import logging
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from ragbudget.text import shown

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, MutableMapping

    from fastmcp import FastMCP

    Scope = MutableMapping[str, Any]
    Message = MutableMapping[str, Any]
    Receive = Callable[[], Awaitable[Message]]
    Send = Callable[[Message], Awaitable[None]]
    ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

__all__ = [
    "LOOPBACK_HOSTS",
    "RefusalLog",
    "StrictHost",
    "check_allowed",
    "check_auth_token",
    "http_app",
    "run_http",
    "well_formed_host",
]

logger = logging.getLogger(__name__)

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
"""`Host` values always accepted (fastmcp's own defaults)."""

_REASONS = {
    401: "no valid bearer token (the Authorization header is not logged)",
    403: "Origin {origin} is not allowed (add it with --allow-origin if it is yours)",
    421: "Host {host} is not allowed (add it with --allow-host if it is yours)",
}


def check_auth_token(token: str | None) -> str | None:
    """The token to require, None for none; a blank or padded token is a ValueError."""
    if token is None:
        return None
    if not token.strip():
        msg = (
            "--auth-token (or RAGBUDGET_AUTH_TOKEN) is empty: give a secret, or unset it to "
            "serve without a token (loopback only)"
        )
        raise ValueError(msg)
    if token != token.strip():
        msg = "--auth-token (or RAGBUDGET_AUTH_TOKEN) starts or ends with whitespace: remove it"
        raise ValueError(msg)
    return token


def check_allowed(hosts: Sequence[str], origins: Sequence[str]) -> None:
    """Refuse `--allow-host`/`--allow-origin` values that could never match (a ValueError)."""
    for host in hosts:
        if not host.strip() or "/" in host or any(c.isspace() for c in host):
            msg = (
                f"--allow-host {shown(host)} is not a host name: give one like 'mybox.lan', "
                "'192.168.1.20' or '*.lan' (no scheme, no path)"
            )
            raise ValueError(msg)
    for origin in origins:
        if origin == "*":
            continue
        parts = urlsplit(origin)
        if parts.scheme not in ("http", "https") or not parts.netloc or parts.path.strip("/"):
            msg = (
                f"--allow-origin {shown(origin)} is not an origin: give one like "
                "'https://app.example' or 'http://localhost:3000' (scheme and host, no path)"
            )
            raise ValueError(msg)


_HOST = re.compile(
    r"(?:\[(?P<ipv6>[0-9A-Fa-f:.]+)\]|(?P<name>[A-Za-z0-9_](?:[A-Za-z0-9_.-]*[A-Za-z0-9_])?))"
    r"(?::(?P<port>[0-9]{1,5}))?"
)


def well_formed_host(value: str) -> bool:
    """Whether `value` is a `Host` header's value: `name[:port]` or `[IPv6][:port]`, nothing
    before, after or inside it (no user info, spaces, escapes or empty labels)."""
    found = _HOST.fullmatch(value)
    if found is None:
        return False
    if found["ipv6"] is not None:
        try:
            ipaddress.IPv6Address(found["ipv6"])
        except ValueError:
            return False
    if found["name"] is not None and "" in found["name"].split("."):
        return False
    return found["port"] is None or 0 < int(found["port"]) < 65536


class StrictHost:
    """ASGI wrapper: an HTTP request without exactly one well-formed `Host` header gets 421
    (`well_formed_host`), before fastmcp's Host/Origin guard reads it."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("type") == "http":
            hosts = [v for k, v in scope.get("headers", ()) if bytes(k).lower() == b"host"]
            if len(hosts) != 1 or not well_formed_host(bytes(hosts[0]).decode("latin-1")):
                from starlette.responses import Response

                await Response("Misdirected Request", status_code=421)(scope, receive, send)
                return
        await self.app(scope, receive, send)


class RefusalLog:
    """ASGI wrapper: log each request refused with 401, 403 or 421 at WARNING.

    It sits outside every other middleware, so it sees the Host/Origin guard's answers as
    well as the bearer check's, and never reads a request body.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("type") != "http":
            await self.app(scope, receive, send)
            return

        async def watch(message: Message) -> None:
            if message.get("type") == "http.response.start":
                status = int(message.get("status", 0))
                if status in _REASONS:
                    self._log(scope, status)
            await send(message)

        await self.app(scope, receive, watch)

    @staticmethod
    def _log(scope: Scope, status: int) -> None:
        headers = {
            bytes(k).decode("latin-1").lower(): bytes(v).decode("latin-1")
            for k, v in scope.get("headers", ())
            if bytes(k).lower() in (b"host", b"origin")
        }
        client = scope.get("client") or ("?", 0)
        reason = _REASONS[status].format(
            host=shown(headers.get("host", "")), origin=shown(headers.get("origin", ""))
        )
        logger.warning(
            "refused %s %s from %s:%s with HTTP %d: %s",
            scope.get("method", "?"),
            shown(str(scope.get("path", "")), 40),
            client[0],
            client[1],
            status,
            reason,
        )


def http_app(
    mcp: FastMCP[Any],
    *,
    path: str,
    bind_host: str,
    allow_hosts: Sequence[str] = (),
    allow_origins: Sequence[str] = (),
) -> ASGIApp:
    """The streamable HTTP app at `path`, Host/Origin checks on, refusals logged."""
    hosts = list(dict.fromkeys([*LOOPBACK_HOSTS, *allow_hosts]))
    if bind_host not in ("0.0.0.0", "::", ""):
        hosts.append(bind_host)
    app = mcp.http_app(
        path=path,
        transport="http",
        host_origin_protection=True,
        allowed_hosts=hosts,
        allowed_origins=list(allow_origins),
    )
    return RefusalLog(StrictHost(app))


def run_http(
    mcp: FastMCP[Any],
    *,
    host: str,
    port: int,
    path: str,
    log_level: str,
    allow_hosts: Sequence[str] = (),
    allow_origins: Sequence[str] = (),
) -> None:
    """Serve `mcp` with uvicorn on `host:port` until stopped (blocking)."""
    import uvicorn

    app = http_app(
        mcp, path=path, bind_host=host, allow_hosts=allow_hosts, allow_origins=allow_origins
    )
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        lifespan="on",
        ws="none",
        log_level=log_level.lower(),
        timeout_graceful_shutdown=2,
    )
    uvicorn.Server(config).run()
