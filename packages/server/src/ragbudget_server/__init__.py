"""ragbudget-server: budgeted search over your files for desktop agents.

The application built on the `ragbudget` library: a Chroma document store
(`ragbudget_server.store`), the MCP server (`ragbudget_server.mcp`, `ragbudget serve`) and the
`ragbudget` command (`ragbudget_server.cli`). Install it with `pip install ragbudget-server`.
"""

__version__ = "0.1.0"
