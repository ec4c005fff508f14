"""The private parts of fastmcp the guard relies on, checked so that a fastmcp upgrade that
changes them fails here, loudly and by name, rather than as a guard that quietly misbehaves."""

from __future__ import annotations

import inspect

from fastmcp.server.providers.proxy import ProxyMetadataMiddleware, ProxyProvider
from ragbudget_guard.proxy import StartTolerantMetadata
from ragbudget_guard.upstream import CACHES


def test_the_metadata_read_the_guard_overrides_is_still_there() -> None:
    # No public hook: `on_initialize` reads the wrapped server after the guard's own answer is
    # made, so only the read itself can tolerate a wrapped server that does not start.
    method = getattr(ProxyMetadataMiddleware, "_read_upstream", None)
    assert method is not None and inspect.iscoroutinefunction(method), (
        "fastmcp no longer has ProxyMetadataMiddleware._read_upstream(client, context): "
        "update StartTolerantMetadata in ragbudget_guard/proxy.py, or the guard will "
        "not start when the wrapped server does not"
    )
    assert list(inspect.signature(method).parameters) == ["self", "client", "context"], (
        "ProxyMetadataMiddleware._read_upstream changed its parameters: update "
        "StartTolerantMetadata in ragbudget_guard/proxy.py"
    )
    source = inspect.getsource(ProxyMetadataMiddleware.on_initialize)
    assert "self._read_upstream(" in source, (
        "ProxyMetadataMiddleware.on_initialize no longer calls _read_upstream: "
        "StartTolerantMetadata in ragbudget_guard/proxy.py overrides nothing"
    )
    assert StartTolerantMetadata._read_upstream is not ProxyMetadataMiddleware._read_upstream


def test_the_proxy_caches_the_guard_drops_are_still_there() -> None:
    provider = ProxyProvider(lambda: None)  # type: ignore[arg-type,return-value]
    for kind, names in CACHES.items():
        for name in names:
            assert hasattr(provider, name), (
                f"fastmcp's ProxyProvider no longer has {name}: ListChanges in "
                f"ragbudget_guard/upstream.py cannot drop the cached {kind} list"
            )


def test_the_stdio_transport_parts_the_guard_reuses_are_still_there() -> None:
    """`Utf8StdioTransport.connect` is fastmcp's `keep_alive` connect over the same state, with
    the SDK's reader given the guard's decoding error handler (ragbudget_guard/stdio.py)."""
    import mcp.client.stdio
    from fastmcp.client.transports import StdioTransport
    from mcp import StdioServerParameters
    from ragbudget_guard.stdio import NOT_UTF8_ERRORS, Utf8StdioTransport

    transport = Utf8StdioTransport("python", ["-c", "pass"])
    for name in ("_connect_lock", "_connect_task", "_ready_event", "_stop_event", "_session",
                 "_session_options", "_active_sessions"):  # fmt: skip
        assert hasattr(transport, name), f"fastmcp's StdioTransport no longer has {name}"
    assert callable(StdioTransport._is_session_dead)
    source = inspect.getsource(StdioTransport.disconnect)
    assert "_stop_event" in source and "_connect_task" in source, (
        "StdioTransport.disconnect no longer stops the connection task by its stop event: "
        "update Utf8StdioTransport in ragbudget_guard/stdio.py"
    )
    assert "encoding_error_handler" in StdioServerParameters.model_fields
    assert "errors=server.encoding_error_handler" in inspect.getsource(mcp.client.stdio), (
        "the SDK's stdio reader no longer decodes with the parameters' error handler: "
        "ragbudget_guard/stdio.py cannot tell bytes that are not UTF-8"
    )
    assert transport.parameters().encoding_error_handler == NOT_UTF8_ERRORS
