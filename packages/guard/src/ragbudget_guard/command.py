"""`ragbudget-guard` (and `ragbudget guard`): any MCP server's tool results within a client's
walls, with continuation.

    ragbudget-guard --client claude-code -- npx -y @modelcontextprotocol/server-filesystem /data
    ragbudget-guard --url https://mcp.example.com/mcp --header "Authorization=Bearer $TOKEN"

The guard speaks MCP over stdio to its client and relays everything to the wrapped server
(started as a subprocess, or reached over streamable HTTP). stdout carries nothing but MCP
messages; the guard's logs and the wrapped server's stderr go to stderr.
"""

from __future__ import annotations

import logging
import warnings
from typing import TYPE_CHECKING, Annotated

import typer
from ragbudget.limits import DEFAULT_PROFILE, PROFILES

from ragbudget_guard.help import PlainFlagsCommand
from ragbudget_guard.logs import LOG_LEVELS, configure_logging

if TYPE_CHECKING:
    from ragbudget.middleware import TokenBudgetMiddleware

__all__ = ["app", "guard", "main", "make_budget", "register"]

logger = logging.getLogger(__name__)

PROFILE_NAMES = ", ".join(p.name for p in (*PROFILES, DEFAULT_PROFILE))


def _fail(ctx: typer.Context, message: str, code: int = 2) -> typer.Exit:
    """`message` on stderr, after the command's name as it was run (`ragbudget-guard` or
    `ragbudget guard`)."""
    typer.echo(f"{ctx.command_path}: {message}", err=True)
    return typer.Exit(code)


def make_budget(
    *,
    max_tokens: int | None = None,
    counter: str | None = None,
    client: str | None = None,
    tool_budgets: dict[str, int] | None = None,
    exclude_tools: tuple[str, ...] = (),
    more_tool: str = "more",
) -> TokenBudgetMiddleware:
    """The middleware for the guard: the walls of the client profile `client`, or of each
    connecting client's own profile (by the name it sends) when None; `max_tokens` replaces the
    profile's token wall when given; counted by `counter`."""
    from ragbudget.middleware import TokenBudgetMiddleware

    return TokenBudgetMiddleware(
        max_tokens,
        client=client,
        counter=counter,
        tool_budgets=tool_budgets,
        exclude_tools=exclude_tools,
        more_tool=more_tool,
    )


def _tool_budgets(pairs: list[str]) -> dict[str, int]:
    from ragbudget_guard.backend import parse_pairs

    budgets: dict[str, int] = {}
    for name, value in parse_pairs("--tool-budget", pairs).items():
        try:
            budgets[name] = int(value)
        except ValueError:
            msg = f"--tool-budget {name}=... takes a number of tokens, got {value!r}"
            raise ValueError(msg) from None
    return budgets


def guard(
    ctx: typer.Context,
    command: Annotated[
        list[str] | None,
        typer.Argument(
            show_default=False,
            help="The wrapped stdio server's command and its arguments, after '--'.",
        ),
    ] = None,
    url: Annotated[
        str | None,
        typer.Option(
            show_default="none: run COMMAND",
            help="A streamable-HTTP MCP server to wrap instead of COMMAND.",
        ),
    ] = None,
    header: Annotated[
        list[str] | None,
        typer.Option(
            "--header",
            show_default="none",
            help="With --url: NAME=VALUE sent with every request, e.g. Authorization=Bearer "
            "<token> (repeatable; never logged).",
        ),
    ] = None,
    env: Annotated[
        list[str] | None,
        typer.Option(
            "--env",
            show_default="none: the guard's own environment",
            help="NAME=VALUE set for the wrapped server over the guard's environment, which it "
            "gets whole (repeatable; never logged).",
        ),
    ] = None,
    name: Annotated[
        str | None,
        typer.Option(
            show_default="the command's file name and first argument, or the URL",
            help="What errors and logs call the wrapped server.",
        ),
    ] = None,
    client: Annotated[
        str | None,
        typer.Option(
            show_default="the connecting client's own, by the name it sends; unknown: "
            f"{DEFAULT_PROFILE.name}, {DEFAULT_PROFILE.walls().describe()}",
            help=f"The client profile whose walls every result keeps within: {PROFILE_NAMES}.",
        ),
    ] = None,
    max_tokens: Annotated[
        int | None,
        typer.Option(
            show_default="the client profile's",
            help="Token wall of every tool result (the profile's character and byte walls stay).",
        ),
    ] = None,
    counter: Annotated[
        str | None,
        typer.Option(
            show_default="exact",
            help="Token counter: exact, estimate, claude, chars:N, tiktoken:<encoding>, "
            "hf:<tokenizer.json>.",
        ),
    ] = None,
    tool_budget: Annotated[
        list[str] | None,
        typer.Option(
            "--tool-budget",
            show_default="none",
            help="NAME=TOKENS: another token budget for one tool (repeatable).",
        ),
    ] = None,
    exclude_tool: Annotated[
        list[str] | None,
        typer.Option(
            "--exclude-tool",
            show_default="none",
            help="A tool whose results pass untouched (repeatable).",
        ),
    ] = None,
    more_tool: Annotated[
        str, typer.Option(help="Name of the continuation tool the guard adds.")
    ] = "more",
    timeout: Annotated[
        float,
        typer.Option(min=0.1, help="Seconds each request to the wrapped server may take."),
    ] = 120.0,
    startup_timeout: Annotated[
        float,
        typer.Option(min=0.1, help="Seconds the wrapped server may take to start and connect."),
    ] = 30.0,
    log_level: Annotated[
        str, typer.Option(help="Log level for stderr (DEBUG, INFO, WARNING, ERROR).")
    ] = "WARNING",
) -> None:
    """Guard any MCP server (Node, Go, Rust, remote): every tool result within the client's
    walls, the rest served page by page by a `more` tool.

    stdout carries nothing but MCP messages; logs and the wrapped server's stderr go to stderr.
    """
    from ragbudget_guard.backend import http_backend, parse_pairs, stdio_backend

    level = log_level.upper()
    if level not in LOG_LEVELS:
        raise _fail(ctx, f"--log-level must be DEBUG, INFO, WARNING or ERROR, got {log_level!r}")
    if url is None and not command:
        raise _fail(
            ctx,
            f"say which server to guard: its command after '--' ({ctx.command_path} -- npx -y "
            "@modelcontextprotocol/server-everything) or --url URL for one over HTTP",
        )
    if url is not None and command:
        raise _fail(
            ctx, "give either --url URL or the wrapped server's command after '--', not both"
        )
    if url is None and header:
        raise _fail(ctx, "--header applies to --url only")
    if url is not None and env:
        raise _fail(ctx, "--env applies to a wrapped command only")
    try:
        if url is not None:
            backend = http_backend(url, headers=parse_pairs("--header", header or []), name=name)
        else:
            backend = stdio_backend(command or [], env=parse_pairs("--env", env or []), name=name)
        budget = make_budget(
            max_tokens=max_tokens,
            counter=counter,
            client=client,
            tool_budgets=_tool_budgets(tool_budget or []),
            exclude_tools=tuple(exclude_tool or ()),
            more_tool=more_tool,
        )
    except (ValueError, TypeError, ImportError) as exc:
        raise _fail(ctx, str(exc)) from None

    configure_logging(level)
    # The SDK marks the handshake-era relays (roots, logging) deprecated; that is upstream's,
    # not something the guard's user can act on.
    from mcp.shared.exceptions import MCPDeprecationWarning

    warnings.filterwarnings("ignore", category=MCPDeprecationWarning)
    logging.getLogger("ragbudget_guard").info(
        "guarding %r: results within %s", backend.name, client or "each client's profile"
    )
    from ragbudget_guard.proxy import build_guard

    server = build_guard(backend, budget, timeout=timeout, startup_timeout=startup_timeout)
    try:
        server.run("stdio", show_banner=False, log_level=level)
    except KeyboardInterrupt:  # pragma: no cover - interactive stop
        return


CONTEXT = {"allow_interspersed_args": False}
"""Everything after the wrapped command's first word belongs to it, as after `--`."""


def register(app: typer.Typer) -> None:
    """Add `guard` to the `ragbudget` command line."""
    app.command("guard", context_settings=CONTEXT)(guard)


app = typer.Typer(
    name="ragbudget-guard",
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings=CONTEXT,
)
"""The `ragbudget-guard` command: `guard` alone."""
app.command(context_settings=CONTEXT, cls=PlainFlagsCommand)(guard)


def main() -> None:
    """Entry point of the `ragbudget-guard` console script."""
    app()
