"""`python -m ragbudget_server.mcp serve ...`: the server without the rest of the CLI."""

from ragbudget_server.mcp.command import main

if __name__ == "__main__":
    main()
