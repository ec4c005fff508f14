"""Retrieval quality: questions over the stdlib's json, email and asyncio packages.

Each question names the file(s) a developer would want to open; one of them must be among the
results of a budgeted search (limit 10, 4,000 tokens), as the model would receive them.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from ragbudget_server.store import DocumentStore

QUESTIONS = [
    ("How does JSON decoding handle escape sequences in strings?", {"json/decoder.py"}),
    ("JSONDecodeError with line number and column", {"json/decoder.py"}),
    ("encode Python objects as JSON text with indent and separators", {"json/encoder.py"}),
    ("parse an email message from a file or a string of bytes", {"email/parser.py"}),
    ("base64 encoding of MIME message bodies", {"email/base64mime.py", "email/encoders.py"}),
    (
        "split an address into its real name and email address parts",
        {"email/utils.py", "email/_parseaddr.py", "email/headerregistry.py"},
    ),
    ("multipart MIME message container for attachments", {"email/mime/multipart.py"}),
    ("quoted-printable encoding of header values", {"email/quoprimime.py"}),
    ("run the event loop until a future completes", {"asyncio/base_events.py"}),
    ("queue get and put that wait when the queue is full or empty", {"asyncio/queues.py"}),
    ("create a subprocess and communicate through its pipes", {"asyncio/subprocess.py"}),
    ("lock and semaphore synchronization primitives", {"asyncio/locks.py"}),
    ("open a TCP connection returning a stream reader and writer", {"asyncio/streams.py"}),
    ("wait for a coroutine with a timeout and cancel it", {"asyncio/tasks.py"}),
]


@pytest.mark.evaluation
@pytest.mark.parametrize(("question", "expected"), QUESTIONS, ids=[q for q, _ in QUESTIONS])
def test_expected_file_is_in_the_budgeted_results(
    stdlib_store: DocumentStore, stdlib: Path, question: str, expected: set[str]
) -> None:
    response = stdlib_store.search(question, limit=10, max_tokens=4000)
    assert stdlib_store.counter.count(response.to_text()) <= 4000
    found = [Path(r.source).relative_to(stdlib).as_posix() for r in response.results]
    assert expected & set(found), f"{question!r}: expected one of {sorted(expected)}, got {found}"
