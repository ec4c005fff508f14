"""The bounded store of cut results that continuation pages are served from.

An LRU with three bounds, all enforced on every write: how many results, how many characters
in all (each result is charged the length of its rendering), and how long a result is kept
since it was last read. Memory therefore stays bounded however many calls are cut; a handle
that was evicted or expired is simply unknown, and the caller is told to call the tool again.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

__all__ = ["PageCache"]

T = TypeVar("T")


@dataclass
class _Entry(Generic[T]):
    value: T
    size: int
    expires: float


class PageCache(Generic[T]):
    """LRU of cut results by handle, bounded in entries, characters and time.

    Args:
        max_entries: most results kept; the least recently used goes first (0 = keep none).
        max_chars: most characters kept in all; a single result larger than this is not kept.
        ttl_seconds: a result not read for this long is dropped.
        clock: seconds as a float (tests pass a fake one); `time.monotonic` by default.
    """

    def __init__(
        self,
        *,
        max_entries: int,
        max_chars: int,
        ttl_seconds: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        for name, value in (("max_entries", max_entries), ("max_chars", max_chars)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                msg = f"{name} must be an int >= 0, got {value!r}"
                raise ValueError(msg)
        if not ttl_seconds > 0:
            msg = f"ttl_seconds must be > 0, got {ttl_seconds!r}"
            raise ValueError(msg)
        self.max_entries, self.max_chars, self.ttl_seconds = max_entries, max_chars, ttl_seconds
        self._clock = clock
        self._entries: OrderedDict[str, _Entry[T]] = OrderedDict()
        self._chars = 0
        self._lock = threading.Lock()

    def __len__(self) -> int:
        with self._lock:
            self._expire(self._clock())
            return len(self._entries)

    @property
    def chars(self) -> int:
        """Characters currently charged to the kept results."""
        return self._chars

    @staticmethod
    def new_handle() -> str:
        """A fresh handle: 12 URL-safe characters, not guessable from other handles."""
        return secrets.token_urlsafe(9)

    def put(self, handle: str, value: T, size: int) -> bool:
        """Keep `value` under `handle`, charged `size` characters, evicting the least recently
        used results as needed; False (and nothing evicted) when `value` alone is over
        `max_chars` or the cache keeps nothing."""
        if size > self.max_chars or self.max_entries == 0:
            return False
        with self._lock:
            now = self._clock()
            self._expire(now)
            if handle in self._entries:
                self._drop(handle)
            self._entries[handle] = _Entry(value, size, now + self.ttl_seconds)
            self._chars += size
            while len(self._entries) > self.max_entries or self._chars > self.max_chars:
                self._drop(next(iter(self._entries)))
        return True

    def get(self, handle: str) -> T | None:
        """The value kept under `handle` (now the most recently used), or None if unknown,
        evicted or expired."""
        with self._lock:
            now = self._clock()
            self._expire(now)
            entry = self._entries.get(handle)
            if entry is None:
                return None
            entry.expires = now + self.ttl_seconds
            self._entries.move_to_end(handle)
            return entry.value

    def _drop(self, handle: str) -> None:
        self._chars -= self._entries.pop(handle).size

    def _expire(self, now: float) -> None:
        # Entries are in last-use order and every use extends by the same TTL, so the
        # expired ones are all at the front.
        while self._entries:
            handle, entry = next(iter(self._entries.items()))
            if entry.expires > now:
                break
            self._drop(handle)
