"""The wrapped server: how the guard reaches it (a stdio command or a streamable-HTTP URL), and
the name its errors give it.

Secrets stay on the wrapped server's side: `--env` values and `--header` values go into the
transport and nowhere else (never a log line, never an error message, never the server's name),
and the guard's own client never sees them. The name is the command's file name and its first
argument, or the URL without credentials, query or fragment.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

__all__ = ["Backend", "http_backend", "parse_pairs", "stdio_backend"]

NAME_CHARS = 80
"""The longest server name the guard puts in a message."""


@dataclass(frozen=True)
class Backend:
    """One wrapped MCP server: a command to start (stdio) or a URL to reach (HTTP)."""

    name: str
    """What the guard's errors and logs call it (never holds a secret)."""
    command: str | None = None
    """The program to start (stdio); None for an HTTP server."""
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict, repr=False)
    """The whole environment the program gets (the guard's, with `--env` over it)."""
    cwd: str | None = None
    url: str | None = None
    """The streamable-HTTP endpoint; None for a stdio server."""
    headers: Mapping[str, str] = field(default_factory=dict, repr=False)
    """Sent with every request to `url` (authentication)."""
    secrets: tuple[str, ...] = field(default=(), repr=False)
    """Values given to the guard for the server (`--env`, `--header`, the URL's password and
    query): redacted from whatever the guard says."""

    def transport(self, on_not_utf8: Callable[[bytes], None] | None = None) -> object:
        """A fastmcp client transport for this server (stdio: one process, kept alive and
        restarted on the next call after it exits, which calls `on_not_utf8` with the bytes
        when it writes some that are not UTF-8: `ragbudget_guard.stdio`)."""
        if self.url is not None:
            from fastmcp.client.transports import StreamableHttpTransport

            return StreamableHttpTransport(self.url, headers=dict(self.headers))
        from ragbudget_guard.stdio import Utf8StdioTransport

        assert self.command is not None
        return Utf8StdioTransport(
            self.command,
            list(self.args),
            env=dict(self.env),
            cwd=self.cwd,
            on_not_utf8=on_not_utf8,
        )


def parse_pairs(option: str, pairs: Sequence[str]) -> dict[str, str]:
    """`NAME=VALUE` options as a dict; the error names the option, never the value."""
    parsed: dict[str, str] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        name = name.strip()
        if not sep or not name:
            shown = name or "(empty)"
            msg = f"{option} takes NAME=VALUE, got one without '=' or a name: {shown!r}"
            raise ValueError(msg)
        parsed[name] = value
    return parsed


def _short(text: str) -> str:
    return text if len(text) <= NAME_CHARS else text[: NAME_CHARS - 1] + "…"


def _command_name(command: str, args: Sequence[str]) -> str:
    """`node index.js`, `npx @modelcontextprotocol/server-filesystem`: the program's file name
    and its first argument that is not an option (options and NAME=VALUE may carry tokens)."""
    words = [Path(command).name]
    first = next((arg for arg in args if not arg.startswith("-")), None)
    if first is not None and "=" not in first:
        words.append(Path(first).name if os.sep in first and first[0] != "@" else first)
    return _short(shlex.join(words))


def stdio_backend(
    command: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    name: str | None = None,
    cwd: str | None = None,
) -> Backend:
    """The server `command` starts, with the guard's environment and `env` over it."""
    if not command or not command[0]:
        msg = "give the wrapped server's command after '--', e.g. -- npx -y @scope/server"
        raise ValueError(msg)
    program, *args = command
    environment = {**os.environ, **(env or {})}
    label = name or _command_name(program, args)
    return Backend(
        label, program, tuple(args), environment, cwd, secrets=tuple((env or {}).values())
    )


def http_backend(
    url: str, *, headers: Mapping[str, str] | None = None, name: str | None = None
) -> Backend:
    """The streamable-HTTP server at `url`."""
    parts = urlsplit(url)
    if parts.scheme not in {"http", "https"} or not parts.hostname:
        msg = f"--url must be an http:// or https:// URL, got one with scheme {parts.scheme!r}"
        raise ValueError(msg)
    host = parts.hostname if parts.port is None else f"{parts.hostname}:{parts.port}"
    label = name or _short(urlunsplit((parts.scheme, host, parts.path, "", "")))
    secrets = [*(headers or {}).values(), parts.password or "", parts.query]
    secrets += [value for _, _, value in (p.partition("=") for p in parts.query.split("&"))]
    return Backend(
        label, url=url, headers=dict(headers or {}), secrets=tuple(s for s in secrets if s)
    )
