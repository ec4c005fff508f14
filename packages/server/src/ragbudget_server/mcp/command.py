"""`ragbudget serve`: run the MCP server over stdio (default) or streamable HTTP at `/mcp`."""

from __future__ import annotations

import enum
import ipaddress
import logging
import os
from pathlib import Path
from typing import Annotated

import typer
from pydantic import ValidationError
from ragbudget.limits import profile_names
from ragbudget_guard.logs import LOG_LEVELS, configure_logging

from ragbudget_server._options import DEFAULT_DB, StoreOptions, store_options
from ragbudget_server.mcp.http_security import check_allowed, check_auth_token, run_http
from ragbudget_server.mcp.settings import (
    CLAUDE_MAX_TOKENS_CEILING,
    DEFAULT_MAX_TOKENS_CEILING,
    ServerSettings,
)

__all__ = ["HTTP_PATH", "Transport", "register", "serve"]

logger = logging.getLogger(__name__)

HTTP_PATH = "/mcp"
"""Where the streamable HTTP transport listens."""


class Transport(enum.StrEnum):
    """How MCP clients reach the server."""

    stdio = "stdio"
    http = "http"


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _fail(message: str, code: int = 2) -> typer.Exit:
    typer.echo(f"ragbudget serve: {message}", err=True)
    return typer.Exit(code)


def _leaf(exc: BaseException) -> BaseException:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def _option(field: str) -> str:
    """`--client: ` for a setting a flag of that name sets (the error names the argument)."""
    return "--client: " if field == "client" else ""


def _require_store(settings: ServerSettings) -> None:
    """`serve` never creates a store: without one (and no root to ingest into it) it stops."""
    from ragbudget_server.store.errors import StoreError
    from ragbudget_server.store.live import require_store_dir

    if settings.server is not None or settings.ingest_enabled:
        return
    path = settings.db if settings.db is not None else DEFAULT_DB
    try:
        require_store_dir(path)
    except StoreError as exc:
        raise _fail(str(exc), code=1) from None


def _check_counter(spec: str | None) -> None:
    """An unknown `--counter` is a usage error naming the option, before the server starts."""
    if spec is None:
        return
    from ragbudget.counters import get_counter

    try:
        get_counter(spec)
    except (ValueError, TypeError, ImportError, OSError) as exc:
        raise _fail(f"--counter {spec!r}: {exc}") from None


def serve(
    ctx: typer.Context,
    transport: Annotated[
        Transport, typer.Option(case_sensitive=False, help="stdio, or streamable HTTP at /mcp.")
    ] = Transport.stdio,
    host: Annotated[str, typer.Option(help="HTTP bind address.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=1, max=65535, help="HTTP port.")] = 8000,
    allow_root: Annotated[
        list[Path] | None,
        typer.Option(
            "--allow-root",
            show_default="none: ingest is off",
            help="Folder the ingest tool may index (repeatable). Without one, ingest is off.",
        ),
    ] = None,
    allow_hard_links: Annotated[
        bool,
        typer.Option(
            "--allow-hard-links",
            envvar="RAGBUDGET_ALLOW_HARD_LINKS",
            show_default="off: refused",
            help="Let ingest index hard-linked files under the roots (their other names may "
            "lie outside them).",
        ),
    ] = False,
    max_tokens_ceiling: Annotated[
        int | None,
        typer.Option(
            show_default=f"{DEFAULT_MAX_TOKENS_CEILING:,}, or {CLAUDE_MAX_TOKENS_CEILING:,} with "
            f"--counter claude: Claude Code's default {CLAUDE_MAX_TOKENS_CEILING:,}-token limit",
            help="Cap on any tool call's max_tokens; larger asks are clamped.",
        ),
    ] = None,
    auth_token: Annotated[
        str | None,
        typer.Option(
            envvar="RAGBUDGET_AUTH_TOKEN",
            show_default="none: no token asked",
            help="HTTP only: require 'Authorization: Bearer <token>' on every request.",
        ),
    ] = None,
    allow_host: Annotated[
        list[str] | None,
        typer.Option(
            "--allow-host",
            envvar="RAGBUDGET_ALLOW_HOST",
            show_default="none: loopback and the bind address only",
            help="HTTP only: a Host header to accept besides loopback and the bind address "
            "(repeatable; fnmatch patterns; env: space-separated). Others get 421.",
        ),
    ] = None,
    allow_origin: Annotated[
        list[str] | None,
        typer.Option(
            "--allow-origin",
            envvar="RAGBUDGET_ALLOW_ORIGIN",
            show_default="none: loopback and same-origin only",
            help="HTTP only: a browser Origin to accept besides loopback and same-origin, "
            "e.g. https://app.example (repeatable; env: space-separated). Others get 403.",
        ),
    ] = None,
    client: Annotated[
        str | None,
        typer.Option(
            "--client",
            envvar="RAGBUDGET_CLIENT",
            show_default="each caller's own, by the name it sends; else default",
            help="Client profile whose walls (tokens, characters, bytes) every answer keeps: "
            f"{', '.join(profile_names())}.",
        ),
    ] = None,
    hybrid: Annotated[
        bool,
        typer.Option(
            "--hybrid/--dense",
            envvar="RAGBUDGET_HYBRID",
            help="Fuse the lexical index's ranking with the vectors' in every search "
            "(--dense: vectors alone).",
        ),
    ] = True,
    log_level: Annotated[
        str, typer.Option(help="Log level for stderr (DEBUG, INFO, WARNING, ERROR).")
    ] = "WARNING",
    *,
    store: StoreOptions,
) -> None:
    """Serve budgeted search to MCP clients (Claude Desktop, Claude Code, Cursor, ...).

    stdout carries nothing but MCP messages; logs go to stderr.
    """
    try:
        from ragbudget_server.mcp.server import create_server
    except ImportError as exc:  # pragma: no cover - only in a broken install
        raise _fail(f"missing a dependency ({exc}): pip install ragbudget-server", code=1) from None

    level = log_level.upper()
    if level not in LOG_LEVELS:
        raise _fail(f"--log-level must be DEBUG, INFO, WARNING or ERROR, got {log_level!r}")
    configure_logging(level, "ragbudget_server")
    db, server = store.location(ctx)
    try:
        settings = ServerSettings(
            db=db,
            server=server,
            connect_timeout=store.connect_timeout,
            read_timeout=store.read_timeout,
            collection=store.collection,
            embedding=store.embedding,
            counter=store.counter,
            allow_roots=tuple(allow_root or ()),
            allow_hard_links=allow_hard_links,
            max_tokens_ceiling=max_tokens_ceiling,
            client=client,
            hybrid=hybrid,
        )
    except ValidationError as exc:
        problems = "; ".join(
            _option(str(err["loc"][0]) if err["loc"] else "")
            + str(err["msg"]).removeprefix("Value error, ")
            for err in exc.errors()
        )
        raise _fail(problems) from None

    if transport is Transport.stdio and (auth_token or allow_host or allow_origin):
        logger.warning(
            "--auth-token, --allow-host and --allow-origin apply to --transport http only; "
            "stdio ignores them"
        )
    if transport is Transport.http:
        if auth_token is None and os.environ.get("RAGBUDGET_AUTH_TOKEN") is not None:
            auth_token = os.environ["RAGBUDGET_AUTH_TOKEN"]  # click drops an empty variable
        try:
            auth_token = check_auth_token(auth_token)
            check_allowed(allow_host or (), allow_origin or ())
        except ValueError as exc:
            raise _fail(str(exc)) from None
    if transport is Transport.http and not auth_token and not _is_loopback(host):
        logger.warning(
            "serving on %s without --auth-token: anyone who can reach it can search the store",
            host,
        )

    _check_counter(store.counter)
    _require_store(settings)
    mcp = create_server(settings, auth_token=auth_token if transport is Transport.http else None)
    try:
        if transport is Transport.stdio:
            mcp.run("stdio", show_banner=False, log_level=level)
        else:
            run_http(
                mcp,
                host=host,
                port=port,
                path=HTTP_PATH,
                log_level=level,
                allow_hosts=allow_host or (),
                allow_origins=allow_origin or (),
            )
    except KeyboardInterrupt:  # pragma: no cover - interactive stop
        return
    except Exception as exc:
        raise _fail(f"cannot serve: {_leaf(exc)}", code=1) from None


def register(app: typer.Typer) -> None:
    """Add `serve` to the `ragbudget` command line."""
    app.command("serve")(store_options()(serve))


def main() -> None:
    """`python -m ragbudget_server.mcp`: the `serve` command on its own."""
    app = typer.Typer(add_completion=False, help="ragbudget MCP server")
    register(app)

    @app.callback()
    def _root() -> None:
        """ragbudget MCP server."""

    app()
