"""A Chroma server (`--server URL`): connect and read timeouts, and one-line errors.

chromadb's HTTP client waits forever by default (`httpx.Client(timeout=None)`): a server that
accepts a connection and never answers would hang every search. Here every request has a
connect timeout and a read timeout (the longest wait for the next bytes of an answer), and a
transport failure (refused, reset, timed out) becomes a `StoreError` that names the server,
the timeout that ran out and the option that sets it.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Concatenate, ParamSpec, Protocol, TypeVar

from ragbudget_server._defaults import DEFAULT_CONNECT_TIMEOUT, DEFAULT_READ_TIMEOUT, MAX_TIMEOUT
from ragbudget_server.store.errors import StoreError, chroma_error, is_damaged

__all__ = [
    "DEFAULT_CONNECT_TIMEOUT",
    "DEFAULT_READ_TIMEOUT",
    "check_timeout",
    "connect",
    "guarded",
    "server_errors",
]


def check_timeout(name: str, value: Any) -> float:
    """`value` as seconds, or a StoreError naming `name` (a number > 0, at most an hour)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        msg = f"{name} must be a number of seconds, got {value!r}"
        raise StoreError(msg)
    if not (math.isfinite(value) and 0 < value <= MAX_TIMEOUT):
        msg = f"{name} must be more than 0 and at most {MAX_TIMEOUT:g} seconds, got {value!r}"
        raise StoreError(msg)
    return float(value)


@contextmanager
def server_errors(where: str | None, connect_timeout: float, read_timeout: float) -> Iterator[None]:
    """Turn the HTTP failures of a call to the server at `where` into one-line StoreErrors.

    Does nothing for an embedded store (`where` None) nor for errors that are not about the
    connection (those keep their own type and message).
    """
    try:
        yield
    except StoreError:
        raise
    except Exception as exc:
        if where is None:
            raise
        if _is_chroma(exc):
            raise chroma_error(where, exc, embedded=False) from exc
        import httpx

        if isinstance(exc, httpx.ConnectTimeout):
            msg = (
                f"the Chroma server at {where} did not accept a connection within "
                f"{connect_timeout:g} s (connect timeout); check that it is up and reachable, "
                "or raise --connect-timeout"
            )
        elif isinstance(exc, httpx.TimeoutException):
            msg = (
                f"the Chroma server at {where} did not answer within {read_timeout:g} s "
                "(read timeout); check that it is up and not overloaded, or raise --read-timeout"
            )
        elif isinstance(exc, httpx.TransportError):
            msg = f"cannot reach the Chroma server at {where}: {exc or type(exc).__name__}"
        else:
            raise
        raise StoreError(msg) from exc


def connect(
    host: str,
    port: int,
    ssl: bool,
    settings: Any,
    *,
    where: str,
    connect_timeout: float,
    read_timeout: float,
) -> Any:
    """A chromadb HttpClient whose every request has the two timeouts.

    chromadb makes requests while it builds the client, before its session can be given a
    timeout: a heartbeat with the timeouts goes first, so a server that does not answer fails
    here instead of hanging in chromadb's constructor.
    """
    import chromadb
    import httpx
    from chromadb.api.fastapi import FastAPI

    timeout = httpx.Timeout(read_timeout, connect=connect_timeout)
    api = FastAPI.resolve_url(
        chroma_server_host=host,
        chroma_server_http_port=port,
        chroma_server_ssl_enabled=ssl,
        default_api_path=settings.chroma_server_api_default_path,
    )
    with server_errors(where, connect_timeout, read_timeout):
        try:
            httpx.get(f"{api}/heartbeat", timeout=timeout).raise_for_status()
        except httpx.HTTPStatusError as exc:
            msg = f"cannot reach the Chroma server at {where}: {exc}"
            raise StoreError(msg) from exc
        client = chromadb.HttpClient(host=host, port=port, ssl=ssl, settings=settings)
        session = getattr(getattr(client, "_server", None), "_session", None)
        if not isinstance(session, httpx.Client):  # pragma: no cover - a chromadb change
            msg = "this chromadb version's HTTP client cannot be given timeouts"
            raise StoreError(msg)
        session.timeout = timeout
        client.heartbeat()
    return client


def _is_chroma(exc: BaseException) -> bool:
    """An error raised by chromadb itself (its Python errors or its Rust bindings')."""
    from chromadb.errors import ChromaError

    return isinstance(exc, ChromaError) or type(exc).__module__.startswith(("chromadb", "chroma"))


class _Backend(Protocol):
    server: str | None
    connect_timeout: float
    read_timeout: float


class _HasBackend(Protocol):
    @property
    def _backend(self) -> _Backend: ...


S = TypeVar("S", bound=_HasBackend)
P = ParamSpec("P")
R = TypeVar("R")


def guarded(method: Callable[Concatenate[S, P], R]) -> Callable[Concatenate[S, P], R]:
    """A store method whose server failures are one-line StoreErrors (see `server_errors`)."""

    @functools.wraps(method)
    def wrapper(self: S, /, *args: P.args, **kwargs: P.kwargs) -> R:
        backend = self._backend
        with server_errors(backend.server, backend.connect_timeout, backend.read_timeout):
            try:
                return method(self, *args, **kwargs)
            except StoreError:
                raise
            except Exception as exc:  # an embedded store's Chroma error, e.g. a damaged file
                path = getattr(backend, "path", None)
                if backend.server is None and (_is_chroma(exc) or is_damaged(exc)):
                    raise chroma_error(str(path), exc, embedded=True) from exc
                raise

    return wrapper
