"""`python -m ragbudget.mcp serve ...`: the server without the rest of the CLI."""

from ragbudget.mcp.command import main

if __name__ == "__main__":
    main()
