"""The `ragbudget` command: ingest files, then search and read them within a token budget.

    ragbudget ingest src/ docs/ --prune
    ragbudget search "how are retries configured" --max-tokens 4000
    ragbudget search "retries" --json --cursor 5be1c0e2a9f4.8
    ragbudget read src/retry.py --offset 120
    ragbudget stats

Options default from the environment: RAGBUDGET_DB, RAGBUDGET_SERVER, RAGBUDGET_COLLECTION,
RAGBUDGET_EMBEDDING, RAGBUDGET_COUNTER, RAGBUDGET_CONNECT_TIMEOUT, RAGBUDGET_READ_TIMEOUT
(`--help` shows each option's default and variable). Errors go to stderr with a non-zero exit
status. Installed by `pip install ragbudget-server`.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

try:
    import typer
    from ragbudget_guard.help import PlainFlagsGroup
    from rich.console import Console
    from rich.markup import escape
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
    from rich.table import Table
except ImportError as exc:  # only in a broken install (tests simulate it in a subprocess)
    msg = f"the ragbudget command is missing a dependency ({exc}): pip install ragbudget-server"
    if Path(sys.argv[0]).stem == "ragbudget":  # the console script: one line, no traceback
        raise SystemExit(f"error: {msg}") from None
    raise ImportError(msg) from None

from ragbudget_server._defaults import DEFAULT_MAX_DOCUMENT_BYTES, DEFAULT_MAX_FILE_BYTES
from ragbudget_server._options import FLAG_OFF, StoreOptions, store_options

__all__ = ["app", "main"]

app = typer.Typer(
    name="ragbudget",
    help="Budgeted search over your files: ingest them, then search and read them within a "
    "token budget.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    cls=PlainFlagsGroup,  # `--watch`, not `--watch <bool>`
)


def _version(value: bool) -> None:
    if value:
        from ragbudget_server import __version__

        sys.stdout.write(f"ragbudget {__version__}\n")
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """Budgeted search over your files: ingest them, then search and read them within a token
    budget."""


out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False)

Json = Annotated[
    bool,
    typer.Option(
        "--json", show_default=FLAG_OFF, help="Print the whole response as JSON (budgeted as JSON)."
    ),
]
OFFSET_HINT = "--offset {offset}"
"""How a notice on the command line says where to continue."""


@contextmanager
def _errors() -> Iterator[None]:
    try:
        yield
    except typer.Exit:  # a RuntimeError too: an exit already said why
        raise
    except (ValueError, TypeError, FileNotFoundError, ImportError, RuntimeError) as exc:
        _print_error(str(exc))
        raise typer.Exit(1) from None


INTERRUPTED = (
    "interrupted: the files ingested before it are stored and nothing is lost; run the same "
    "ingest again to finish (unchanged files are skipped)"
)


def _print_error(message: str) -> None:
    """One line on stderr: rich's colours on a terminal, plain text (never wrapped) otherwise."""
    line = " ".join(message.split("\n"))
    if err.is_terminal:
        err.print(f"[bold red]error:[/] {escape(line)}", soft_wrap=True)
    else:
        sys.stderr.write(f"error: {line}\n")


@app.command()
@store_options()
def ingest(
    ctx: typer.Context,
    paths: Annotated[list[Path], typer.Argument(help="Files and folders to ingest.")],
    chunk_tokens: Annotated[int, typer.Option(help="Largest chunk, in tokens.")] = 512,
    overlap: Annotated[int, typer.Option(help="Tokens shared by neighbouring chunks.")] = 64,
    prune: Annotated[bool, typer.Option(help="Remove the chunks of files that are gone.")] = False,
    max_file_bytes: Annotated[
        int | None,
        typer.Option(
            show_default=f"{DEFAULT_MAX_FILE_BYTES:,} bytes, 4 MiB",
            help="Skip text files larger than this many bytes (and documents whose text is).",
        ),
    ] = None,
    max_document_bytes: Annotated[
        int | None,
        typer.Option(
            show_default=f"{DEFAULT_MAX_DOCUMENT_BYTES:,} bytes, 64 MiB",
            help="Skip PDF and Office files larger than this many bytes.",
        ),
    ] = None,
    watch: Annotated[
        bool,
        typer.Option(help="Then keep watching PATHS and ingest again on changes (watchfiles)."),
    ] = False,
    *,
    store: StoreOptions,
) -> None:
    """Chunk and store text, code, PDF, Word, PowerPoint, Excel, CSV, HTML and e-mail files.

    Unchanged files are skipped. PDF and Office files need the documents extra:
    pip install 'ragbudget-server\\[documents]', or in a checkout
    uv run --package ragbudget-server --extra documents ragbudget ingest ...
    """
    with _errors():
        documents = store.open(ctx)
        columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                   TimeElapsedColumn(), TextColumn("{task.fields[path]}", style="dim"))  # fmt: skip
        # Off a terminal there is nothing to animate (and rich would leave an empty line).
        shown = err.is_terminal
        with Progress(*columns, console=err, transient=True, disable=not shown) as progress:
            task = progress.add_task("ingesting", total=None, path="")

            def on_progress(done: int, total: int, path: str) -> None:
                progress.update(task, completed=done, total=total, path=Path(path).name)

            limits = {
                name: value
                for name, value in (
                    ("max_file_bytes", max_file_bytes),
                    ("max_document_bytes", max_document_bytes),
                )
                if value is not None
            }
            try:
                report = documents.ingest(
                    paths, chunk_tokens=chunk_tokens, overlap=overlap, prune=prune,
                    on_progress=on_progress, **limits,
                )  # fmt: skip
            except KeyboardInterrupt:
                progress.stop()
                _print_error(INTERRUPTED)
                raise typer.Exit(130) from None
        title = f"ingest into {store.collection!r}"
        table = Table(title=title, show_header=False, title_justify="left")
        for label, value in (
            ("files seen", report.files_seen),
            ("ingested", report.files_ingested),
            ("unchanged", report.files_unchanged),
            ("skipped", len(report.files_skipped)),
            ("removed (now unindexable)", len(report.files_removed)),
            ("errors", len(report.errors)),
            ("chunks added", report.chunks_added),
            ("chunks deleted", report.chunks_deleted),
            ("documents pruned", report.sources_pruned),
            ("gone but still stored", report.sources_stale),
        ):
            table.add_row(label, f"{value:,}")
        out.print(table)
        for problem in report.files_skipped:
            err.print(
                f"[dim]skipped {escape(problem.path)}: {escape(problem.reason)}[/]", soft_wrap=True
            )
        for problem in report.files_removed:
            err.print(
                f"[yellow]removed {escape(problem.path)}: {escape(problem.reason)}[/]",
                soft_wrap=True,
            )
        for problem in report.errors:
            err.print(
                f"[yellow]could not read {escape(problem.path)}: {escape(problem.reason)}[/]",
                soft_wrap=True,
            )
        if report.sources_stale:
            again = " ".join(["ragbudget ingest", *map(str, paths), "--prune"])
            err.print(
                f"[yellow]{report.sources_stale:,} documents under these paths are gone from "
                f"disk but still searchable: run `{escape(again)}` to remove them[/]",
                soft_wrap=True,
            )
        if watch:
            _watch(
                documents, paths, prune=prune, chunk_tokens=chunk_tokens, overlap=overlap, **limits
            )


def _watch(store: Any, paths: list[Path], **options: Any) -> None:
    from ragbudget_server.store.watch import watch

    def on_sync(report: Any) -> None:
        sys.stderr.write(
            f"synced: {report.files_ingested} ingested, {report.chunks_added} chunks added, "
            f"{report.chunks_deleted} deleted, {report.sources_pruned} documents pruned\n"
        )
        sys.stderr.flush()

    def on_ready() -> None:
        sys.stderr.write(f"watching {', '.join(map(str, paths))} for changes (Ctrl-C to stop)\n")
        sys.stderr.flush()

    def on_start(changes: int) -> None:
        sys.stderr.write(f"syncing {changes} changes\n")
        sys.stderr.flush()

    watch(store, paths, on_sync=on_sync, on_ready=on_ready, on_start=on_start, **options)


@app.command()
@store_options(without=("embedding",))
def search(
    ctx: typer.Context,
    query: Annotated[str, typer.Argument(help="What to look for.")],
    max_tokens: Annotated[int, typer.Option(help="Token budget for the whole response.")] = 8192,
    limit: Annotated[int, typer.Option(help="Most results per page.")] = 10,
    cursor: Annotated[
        str | None,
        typer.Option(
            show_default="none: a new ranking",
            help="Continue a search's ranking (same query and filters): the --cursor a notice "
            "names. It lasts an hour; pages by cursor never repeat or skip a chunk.",
        ),
    ] = None,
    concise: Annotated[bool, typer.Option(help="Short snippets and fewer fields.")] = False,
    file_type: Annotated[
        str | None, typer.Option(show_default="any", help="Only this extension, e.g. py.")
    ] = None,
    directory: Annotated[
        Path | None, typer.Option(show_default="anywhere", help="Only files under this folder.")
    ] = None,
    evidence: Annotated[
        bool,
        typer.Option(
            "--evidence/--plain",
            help=(
                "Merge adjacent chunks of a file, leave duplicates out and show the best-matching "
                "lines of long results under tight budgets (--plain: the ranked prefix of whole "
                "chunks)."
            ),
        ),
    ] = True,
    max_per_source: Annotated[
        int | None,
        typer.Option(show_default="no cap", help="Most results per file (with --evidence).", min=1),
    ] = None,
    hybrid: Annotated[
        bool,
        typer.Option(
            "--hybrid/--dense",
            help=(
                "Fuse the lexical index's ranking (exact words, identifiers, CJK text) with the "
                "vectors' (--dense: vectors alone)."
            ),
        ),
    ] = True,
    as_json: Json = False,
    explain: Annotated[
        bool,
        typer.Option(
            "--explain",
            show_default=FLAG_OFF,
            help="Show each candidate (kept, cut, dropped) and the budget spent.",
        ),
    ] = False,
    *,
    store: StoreOptions,
) -> None:
    """Search the stored files; the response fits --max-tokens."""
    with _errors():
        documents = store.open(ctx, existing=True)
        response = documents.search(
            query, limit=limit, max_tokens=max_tokens, concise=concise,
            file_type=file_type, directory=str(directory) if directory else None,
            format="json" if as_json else "text", offset_hint=OFFSET_HINT, evidence=evidence,
            max_per_source=max_per_source, cursor=cursor, hybrid=hybrid,
        )  # fmt: skip
        if explain:
            where = str(directory) if directory else None
            ranked = documents.candidates(
                query, limit=limit, file_type=file_type, directory=where,
                hybrid=hybrid,
            )  # fmt: skip
            from ragbudget_server.explain import explain_search

            out.print(explain_search(response, ranked))
            return
        sys.stdout.write(response.to_text() + "\n")


@app.command()
@store_options(without=("embedding",))
def read(
    ctx: typer.Context,
    source: Annotated[
        str, typer.Argument(help="A stored document's path (or a unique end of it).")
    ],
    offset: Annotated[int, typer.Option(help="First line, 1-based.")] = 1,
    char_offset: Annotated[
        int, typer.Option(help="Start inside line --offset, at this character (a notice says).")
    ] = 0,
    limit: Annotated[
        int | None, typer.Option(show_default="as many as --max-tokens holds", help="Most lines.")
    ] = None,
    max_tokens: Annotated[int, typer.Option(help="Token budget for the whole response.")] = 8192,
    page: Annotated[
        int | None,
        typer.Option(
            show_default="none: by --offset", help="Start at this page (PDF) or slide.", min=1
        ),
    ] = None,
    as_json: Json = False,
    *,
    store: StoreOptions,
) -> None:
    """Print a stored document's lines; the response fits --max-tokens."""
    with _errors():
        response = store.open(ctx, existing=True).read(
            source, offset=offset, limit=limit, max_tokens=max_tokens, char_offset=char_offset,
            format="json" if as_json else "text", offset_hint=OFFSET_HINT, page=page,
        )  # fmt: skip
        if as_json:
            sys.stdout.write(response.to_text() + "\n")
            return
        sys.stdout.write(response.text + ("\n" if response.text else ""))
        if response.notice:
            err.print(f"[cyan]{escape(response.notice)}[/]")


@app.command()
@store_options(without=("embedding", "counter"))
def stats(
    ctx: typer.Context,
    as_json: Json = False,
    *,
    store: StoreOptions,
) -> None:
    """What the store holds."""
    with _errors():
        result = store.open(ctx, counter=False, existing=True).stats()
        if as_json:
            sys.stdout.write(result.model_dump_json() + "\n")
            return
        table = Table(show_header=False)
        for key, value in result.model_dump(exclude={"files_skipped"}).items():
            if value is not None:
                table.add_row(key, f"{value:,}" if isinstance(value, int) else str(value))
        out.print(table)
        for problem in result.files_skipped:
            out.print(f"skipped {escape(problem.path)}: {escape(problem.reason)}", soft_wrap=True)
        if result.files_skipped_count > len(result.files_skipped):
            more = result.files_skipped_count - len(result.files_skipped)
            out.print(f"... and {more:,} more skipped files")


def _register_extras() -> None:
    """Commands other parts of ragbudget add when their extra is installed (`serve`, `guard`)."""
    try:
        from ragbudget_guard.command import register as register_guard

        from ragbudget_server.mcp.command import register
    except ImportError:  # the mcp extra is not installed
        return
    register(app)
    register_guard(app)


_register_extras()


def main() -> None:
    """Entry point of the `ragbudget` console script.

    On a terminal, usage errors get typer's framed message; otherwise (a pipe, a log file, an
    agent running the command) they are one plain line, as the commands' own errors are.
    """
    if err.is_terminal or len(sys.argv) < 2:  # (no arguments: the help, as typer prints it)
        app()
        return
    try:
        code = app(standalone_mode=False)
    except typer.Abort:
        _print_error("aborted")
        sys.exit(1)
    except typer.TyperException as exc:  # usage errors: typer's (vendored) click exceptions
        _print_error(exc.format_message() + _help_hint(exc))
        sys.exit(exc.exit_code)
    sys.exit(code if isinstance(code, int) else 0)


def _help_hint(exc: Exception) -> str:
    ctx = getattr(exc, "ctx", None)
    if ctx is None:
        return ""
    return f" (see '{ctx.command_path} --help')"
