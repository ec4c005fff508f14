"""Write docs/mcp.md's client table from `packages/core/src/ragbudget/clients.json`.

    uv run --all-packages python tools/client_table.py          # rewrite the table
    uv run --all-packages python tools/client_table.py --check  # exit 1 if it is out of date

The table sits between the two marker comments below in docs/mcp.md; the suite runs `--check`
(tests/core/test_clients_table.py), so a changed row without its docs fails there.
"""

from __future__ import annotations

import sys
from pathlib import Path

from ragbudget.limits import profile_table

DOC = Path(__file__).resolve().parent.parent / "docs" / "mcp.md"
START = "<!-- client-table: written by tools/client_table.py from clients.json -->\n"
END = "<!-- /client-table -->\n"


def rewritten(text: str) -> str:
    """`text` with the table between the markers replaced by `profile_table()`."""
    head, start, rest = text.partition(START)
    _, end, tail = rest.partition(END)
    if not start or not end:
        msg = f"{DOC} has no client-table markers ({START.strip()} ... {END.strip()})"
        raise SystemExit(msg)
    return f"{head}{START}{profile_table()}{END}{tail}"


def main(argv: list[str]) -> int:
    text = DOC.read_text(encoding="utf-8")
    new = rewritten(text)
    if "--check" in argv:
        if new != text:
            print(f"{DOC}: the client table is out of date: run tools/client_table.py")
            return 1
        return 0
    DOC.write_text(new, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
