"""Why a file is not indexed: the one exception every reader raises."""

from __future__ import annotations

__all__ = ["Unindexable"]


class Unindexable(Exception):
    """A file the ingest leaves out; the message is the reason its report gives."""

    @property
    def reason(self) -> str:
        return str(self)
