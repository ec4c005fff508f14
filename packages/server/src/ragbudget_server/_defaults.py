"""Defaults shared by the store, the CLI and the MCP server, in a module that imports nothing.

(`ragbudget_server.store` imports chromadb: the command line and the server's settings read these
without paying for it.)
"""

from __future__ import annotations

__all__ = [
    "DEFAULT_CONNECT_TIMEOUT",
    "DEFAULT_MAX_DOCUMENT_BYTES",
    "DEFAULT_MAX_FILE_BYTES",
    "DEFAULT_READ_TIMEOUT",
    "MAX_TIMEOUT",
]

DEFAULT_CONNECT_TIMEOUT = 10.0
"""Seconds to wait for a TCP (and TLS) connection to a Chroma server."""

DEFAULT_READ_TIMEOUT = 30.0
"""Seconds to wait for the next bytes of a Chroma server's answer (not for the whole answer)."""

MAX_TIMEOUT = 3600.0
"""Longest timeout accepted."""

DEFAULT_MAX_FILE_BYTES = 4 * 1024 * 1024
"""Largest file `ingest` reads: the store's default (`store.MAX_FILE_BYTES`), here so that
`--help` shows it without loading Chroma."""

DEFAULT_MAX_DOCUMENT_BYTES = 64 * 1024 * 1024
"""Largest PDF or Office file `ingest` reads (their images weigh more than their text, which is
held to `DEFAULT_MAX_FILE_BYTES` once converted)."""
