"""Real text for the benchmarks: retrieval-sized chunks of the Python standard library."""

from __future__ import annotations

import sysconfig
from pathlib import Path

from ragbudget import use_bundled_tiktoken_files

STDLIB = Path(sysconfig.get_paths()["stdlib"])

PACKAGES = ("json", "email", "asyncio", "logging", "http", "xml", "importlib", "unittest")
"""The stdlib packages the store benchmarks build their stores from (QUICK: a smoke run's)."""
QUICK = ("json", "email")
QUERIES = [  # questions over PACKAGES, the store benchmarks' own
    "decode a JSON document",
    "parse email headers",
    "run the event loop until complete",
    "rotating file handler",
    "HTTP status codes and reason phrases",
    "parse an XML document into elements",
    "import a module from a file path",
    "assertRaises context manager",
    "cancel a task with a timeout",
    "format a log record",
]


def offline_tiktoken() -> None:
    """Point tiktoken at llama-index-core's bundled BPE files (no network here)."""
    use_bundled_tiktoken_files()


def stdlib_chunks(n: int, size: int = 1500) -> list[str]:
    """`n` chunks of about `size` characters, cut at line ends from stdlib modules."""
    out: list[str] = []
    for path in sorted(STDLIB.glob("*.py")):
        text = path.read_text(encoding="utf-8", errors="replace")
        buf: list[str] = []
        length = 0
        for line in text.splitlines(keepends=True):
            buf.append(line)
            length += len(line)
            if length >= size:
                out.append("".join(buf))
                buf, length = [], 0
                if len(out) == n:
                    return out
    return out
