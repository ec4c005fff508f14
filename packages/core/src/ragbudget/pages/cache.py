"""The bounded store of cut results that continuation pages are served from.

An LRU with four bounds, all enforced on every write: how many results, how many characters
in all (each result is charged the length of its rendering), how many bytes of memory in all
(each result is charged what it holds, measured object by object with `held_bytes`: a parsed
JSON result holds about 20 times its characters), and how long a result is kept since it was
last read. Memory therefore stays bounded however many calls are cut; a handle that was
evicted or expired is simply unknown, and the caller is told to call the tool again.
"""

from __future__ import annotations

import secrets
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

__all__ = ["PageCache", "describe_ttl", "held_bytes"]

T = TypeVar("T")


def held_bytes(value: object, limit: int | None = None) -> int:
    """The bytes the objects reachable from `value` through lists, tuples and dicts take
    (`sys.getsizeof`, each object once): what keeping `value` costs. Counting stops once past
    `limit` (the total so far is returned)."""
    seen: set[int] = set()
    total, stack = 0, [value]
    while stack:
        obj = stack.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        total += sys.getsizeof(obj)
        if limit is not None and total > limit:
            break
        if isinstance(obj, dict):
            stack.extend(obj.keys())
            stack.extend(obj.values())
        elif isinstance(obj, (list, tuple)):
            stack.extend(obj)
    return total


def describe_ttl(seconds: float) -> str:
    """`15 minutes`, `90 seconds`: how long a handle lives, in words."""
    if seconds >= 120 and seconds % 60 == 0:
        return f"{seconds / 60:,.0f} minutes"
    return f"{seconds:,.0f} seconds"


@dataclass
class _Entry(Generic[T]):
    value: T
    size: int
    nbytes: int
    expires: float


class PageCache(Generic[T]):
    """LRU of cut results by handle, bounded in entries, characters, memory and time.

    Args:
        max_entries: most results kept; the least recently used goes first (0 = keep none).
        max_chars: most characters kept in all; a single result larger than this is not kept.
        max_bytes: most bytes of memory kept in all (as `put` is told each value holds); a
            single result larger than this is not kept. None: no such bound.
        ttl_seconds: a result not read for this long is dropped.
        clock: seconds as a float (tests pass a fake one); `time.monotonic` by default.
    """

    def __init__(
        self,
        *,
        max_entries: int,
        max_chars: int,
        ttl_seconds: float,
        max_bytes: int | None = None,
        clock: Callable[[], float] = time.monotonic,
        names: dict[str, str] | None = None,
    ) -> None:
        """`names` maps these arguments' names to those the caller's errors should use."""
        names = names or {}
        bounds = [("max_entries", max_entries), ("max_chars", max_chars)]
        bounds += [] if max_bytes is None else [("max_bytes", max_bytes)]
        for name, value in bounds:
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                msg = f"{names.get(name, name)} must be an int >= 0, got {value!r}"
                raise ValueError(msg)
        if isinstance(ttl_seconds, bool) or not isinstance(ttl_seconds, (int, float)):
            msg = f"{names.get('ttl_seconds', 'ttl_seconds')} must be a number, got {ttl_seconds!r}"
            raise TypeError(msg)
        if not ttl_seconds > 0 or ttl_seconds == float("inf"):
            msg = f"{names.get('ttl_seconds', 'ttl_seconds')} must be > 0 and finite, "
            msg += f"got {ttl_seconds!r}"
            raise ValueError(msg)
        self.max_entries, self.max_chars, self.ttl_seconds = max_entries, max_chars, ttl_seconds
        self.max_bytes = sys.maxsize if max_bytes is None else max_bytes
        self._clock = clock
        self._entries: OrderedDict[str, _Entry[T]] = OrderedDict()
        self._chars = 0
        self._bytes = 0
        self._lock = threading.Lock()

    def __len__(self) -> int:
        with self._lock:
            self._expire(self._clock())
            return len(self._entries)

    @property
    def chars(self) -> int:
        """Characters currently charged to the kept results."""
        return self._chars

    @property
    def nbytes(self) -> int:
        """Bytes of memory currently charged to the kept results."""
        return self._bytes

    @staticmethod
    def new_handle() -> str:
        """A fresh handle: 12 URL-safe characters, not guessable from other handles."""
        return secrets.token_urlsafe(9)

    def put(self, handle: str, value: T, size: int, *, nbytes: int = 0) -> bool:
        """Keep `value` under `handle`, charged `size` characters and `nbytes` bytes of memory
        (what it holds: `held_bytes`), evicting the least recently used results as needed;
        False (and nothing evicted) when `value` alone is over `max_chars` or `max_bytes`, or
        the cache keeps nothing."""
        if size > self.max_chars or nbytes > self.max_bytes or self.max_entries == 0:
            return False
        with self._lock:
            now = self._clock()
            self._expire(now)
            if handle in self._entries:
                self._drop(handle)
            self._entries[handle] = _Entry(value, size, nbytes, now + self.ttl_seconds)
            self._chars += size
            self._bytes += nbytes
            while (
                len(self._entries) > self.max_entries
                or self._chars > self.max_chars
                or self._bytes > self.max_bytes
            ):
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

    def discard(self, handle: str) -> None:
        """Let the result under `handle` go (a walk read to the end); nothing if unknown."""
        with self._lock:
            if handle in self._entries:
                self._drop(handle)

    def _drop(self, handle: str) -> None:
        entry = self._entries.pop(handle)
        self._chars -= entry.size
        self._bytes -= entry.nbytes

    def _expire(self, now: float) -> None:
        # Entries are in last-use order and every use extends by the same TTL, so the
        # expired ones are all at the front.
        while self._entries:
            handle, entry = next(iter(self._entries.items()))
            if entry.expires > now:
                break
            self._drop(handle)
