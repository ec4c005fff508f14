"""Chroma's vector index files, checked before the engine opens them.

An embedded Chroma keeps each collection's HNSW index in a folder of the store
(`<segment uuid>/header.bin`, `data_level0.bin`, `length.bin`, `link_lists.bin`), written by
hnswlib outside SQLite. Chroma's native code trusts them: a truncated `header.bin` or garbled
neighbour lists in `data_level0.bin` crash the process (SIGSEGV) instead of raising. So the
store reads what can be checked cheaply before handing a folder to Chroma: the header's fields,
each file's size against them (room for the nodes the header counts, at most for the nodes it
was sized for), and that every node's level-0 neighbour list holds at most `maxM0` ids, each a
node of the index. An empty `header.bin` (no index written yet: the vectors are in SQLite's
log) has nothing to check.

A check reads the level-0 file once (about 4 KB a chunk: 9 MB for 2,000 chunks); it is
remembered by the files' sizes and modification times, so a process checks a folder again only
when Chroma wrote it since.
"""

from __future__ import annotations

import struct
import threading
from pathlib import Path

import numpy as np

__all__ = ["damage"]

_HEADER = struct.Struct("<iQQQQQQiIQQQdQ")
"""hnswlib's header as Chroma's fork writes it: version, offsetLevel0, max_elements,
cur_element_count, size_data_per_element, label_offset, offsetData, maxlevel,
enterpoint_node, maxM, maxM0, M, mult, ef_construction (100 bytes)."""
_FILES = ("header.bin", "data_level0.bin", "length.bin", "link_lists.bin")

_checked: dict[str, tuple[tuple[int, int], ...]] = {}
_lock = threading.Lock()


def damage(store: Path) -> str | None:
    """What is wrong with a vector index file in the store folder `store`, or None."""
    for folder in sorted(p for p in store.iterdir() if (p / "header.bin").is_file()):
        try:
            stamp = tuple((s.st_size, s.st_mtime_ns) for s in
                          ((folder / name).stat() for name in _FILES))  # fmt: skip
        except OSError as exc:
            return f"{folder.name}: {exc.strerror or exc}"
        key = str(folder)
        with _lock:
            if _checked.get(key) == stamp:
                continue
        problem = _segment(folder, [size for size, _ in stamp])
        if problem is not None:
            return f"{folder.name}/{problem}"
        with _lock:
            _checked[key] = stamp
    return None


def _segment(folder: Path, sizes: list[int]) -> str | None:
    header_size, data_size, length_size, _ = sizes
    if header_size == 0:
        return None  # no index written yet: the vectors are in SQLite's log
    if header_size != _HEADER.size:
        return f"header.bin is {header_size:,} bytes, not {_HEADER.size}"
    fields = _HEADER.unpack((folder / "header.bin").read_bytes())
    version, offset0, most, count, per_element, label_offset, offset_data, top, entry = fields[:9]
    max_m0 = fields[10]
    link_bytes = 4 + 4 * max_m0  # a count, then up to maxM0 neighbour ids (uint32)
    if (version != 1 or offset0 != 0 or not 0 <= count <= most or not -1 <= top <= 64
            or (count > 0) != (top >= 0) or (count > 0 and entry >= count)
            or not 0 < max_m0 <= 4096 or offset_data != link_bytes
            or not offset_data < label_offset <= per_element - 8):  # fmt: skip
        return "header.bin does not hold a valid index header"
    # Room for `count` nodes at least, for the `most` the index was sized for at most.
    if data_size % per_element or not count * per_element <= data_size <= most * per_element:
        return (f"data_level0.bin is {data_size:,} bytes, not room for {count:,} to {most:,} "
                f"nodes of {per_element:,}")  # fmt: skip
    if not count * 4 <= length_size <= most * 4:
        return f"length.bin is {length_size:,} bytes, not room for {count:,} to {most:,} nodes"
    if count == 0:
        return None
    rows = np.memmap(
        folder / "data_level0.bin", dtype=np.uint8, mode="r", shape=(count, per_element)
    )
    links = np.ascontiguousarray(rows[:, :link_bytes]).view("<u4").reshape(count, 1 + max_m0)
    del rows
    held = links[:, 0] & 0xFFFF  # the count's low two bytes (hnswlib keeps a flag above them)
    if bool((held > max_m0).any()):
        return "data_level0.bin holds a neighbour list longer than the index allows"
    used = np.arange(max_m0) < held[:, None]
    if bool((links[:, 1:][used] >= count).any()):
        return "data_level0.bin names a neighbour that is not in the index"
    return None
