"""The store options every command shares (`ingest`, `search`, `read`, `stats`, `serve`), once.

`--db`, `--server`, `--collection`, `--embedding`, `--counter` and the Chroma server timeouts,
each with its environment variable, and one precedence rule: a command-line option beats the
environment; `--db` and `--server` given at the same level is an error the store reports.
`@store_options` adds them to a typer command, which receives them as one `StoreOptions`.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Annotated, Any, TypeVar, get_type_hints

import typer

from ragbudget_server._defaults import DEFAULT_CONNECT_TIMEOUT, DEFAULT_READ_TIMEOUT

__all__ = ["FLAG_OFF", "StoreOptions", "store_options"]

DEFAULT_DB = Path(".ragbudget")
FLAG_OFF = "off"
"""`show_default` of a flag without a `--no-` form (typer shows no default for those)."""

Db = Annotated[
    Path | None,
    typer.Option(
        "--db",
        envvar="RAGBUDGET_DB",
        readable=False,  # the store says what is wrong with the folder, in one line
        show_default=f"{DEFAULT_DB}, in the current folder",
        help="Embedded store folder. Use an absolute path in desktop client configs: they start "
        "servers in an arbitrary folder.",
    ),
]
Server = Annotated[
    str | None,
    typer.Option(
        "--server",
        envvar="RAGBUDGET_SERVER",
        show_default="none: the --db folder",
        help="Chroma server URL instead of --db, e.g. http://127.0.0.1:8000.",
    ),
]
Collection = Annotated[str, typer.Option(envvar="RAGBUDGET_COLLECTION", help="Collection name.")]
Embedding = Annotated[
    str | None,
    typer.Option(
        envvar="RAGBUDGET_EMBEDDING",
        show_default="the collection's own, else hashing",
        help="'hashing' (offline), 'minilm' (downloads), a Chroma embedding name, or a local "
        "sentence-transformers model folder.",
    ),
]
Counter = Annotated[
    str | None,
    typer.Option(
        envvar="RAGBUDGET_COUNTER",
        show_default="the collection's own, else exact",
        help="Token counter: exact, estimate, claude, chars:N, tiktoken:<encoding>, "
        "hf:<tokenizer.json>.",
    ),
]
ConnectTimeout = Annotated[
    float,
    typer.Option(
        envvar="RAGBUDGET_CONNECT_TIMEOUT",
        help="With --server: seconds to wait for a connection.",
    ),
]
ReadTimeout = Annotated[
    float,
    typer.Option(
        envvar="RAGBUDGET_READ_TIMEOUT",
        help="With --server: seconds to wait for each answer.",
    ),
]


@dataclass(frozen=True)
class StoreOptions:
    """Where the store is and how to open it, as the command line and environment gave it."""

    db: Path | None = None
    server: str | None = None
    collection: str = "documents"
    embedding: str | None = None
    counter: str | None = None
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT
    read_timeout: float = DEFAULT_READ_TIMEOUT

    def location(self, ctx: typer.Context) -> tuple[Path | None, str | None]:
        """`(db, server)` with the precedence rule applied: the command line beats the
        environment; both from one level are kept (the store refuses them, naming both)."""
        db, server = self.db, self.server or None
        if db is None or server is None:
            return db, server
        db_source, server_source = (
            ctx.get_parameter_source("db"),
            ctx.get_parameter_source("server"),
        )
        if db_source == server_source:
            return db, server
        if server_source is not None and server_source.name == "COMMANDLINE":
            return None, server
        return db, None

    def open(self, ctx: typer.Context, *, counter: bool = True, existing: bool = False) -> Any:
        """The `DocumentStore` these options name (`counter=False`: the collection's own).

        `existing`: for a read, a folder that holds no store is the store's error now, before
        Chroma loads (a second or so instead of three)."""
        db, server = self.location(ctx)
        path = db if server is not None or db is not None else DEFAULT_DB
        if existing and server is None and path is not None:
            from ragbudget_server.store.live import require_store_dir

            require_store_dir(path)
        from ragbudget_server.store import DocumentStore

        return DocumentStore(
            path=path,
            server=server,
            collection=self.collection,
            embedding=self.embedding,
            counter=self.counter if counter else None,
            connect_timeout=self.connect_timeout,
            read_timeout=self.read_timeout,
        )


_TYPES: dict[str, Any] = {
    "db": Db,
    "server": Server,
    "collection": Collection,
    "embedding": Embedding,
    "counter": Counter,
    "connect_timeout": ConnectTimeout,
    "read_timeout": ReadTimeout,
}
_NAMES = [f.name for f in fields(StoreOptions)]
F = TypeVar("F", bound=Callable[..., Any])


def store_options(*, without: tuple[str, ...] = ()) -> Callable[[F], F]:
    """Add the store options (less `without`) to a typer command taking `store: StoreOptions`.

    The options are appended to the command's own parameters (so `--help` lists them last)
    and gathered into one `StoreOptions` passed as `store`.
    """
    names = [name for name in _NAMES if name not in without]

    def decorate(func: F) -> F:
        signature = inspect.signature(func, eval_str=True)
        hints = get_type_hints(func, include_extras=True)
        defaults = {f.name: f.default for f in fields(StoreOptions)}
        own = [p for name, p in signature.parameters.items() if name != "store"]
        added = [
            inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=defaults[name],
                              annotation=_TYPES[name])
            for name in names
        ]  # fmt: skip

        @functools.wraps(func)
        def command(*args: Any, **kwargs: Any) -> Any:
            given = {name: kwargs.pop(name) for name in names}
            return func(*args, store=StoreOptions(**given), **kwargs)

        command.__signature__ = signature.replace(parameters=[*own, *added])  # type: ignore[attr-defined]
        hints.pop("store", None)
        command.__annotations__ = {**hints, **{name: _TYPES[name] for name in names}}
        return command  # type: ignore[return-value]

    return decorate
