"""What one conversion may cost: bytes on disk, text out, pages, time, and zip expansion."""

from __future__ import annotations

import re
import time
import zipfile
from dataclasses import dataclass, field

from ragbudget_server.store.convert.errors import Unindexable

__all__ = ["MARKER", "Limits", "check_zip", "page_marker"]

MARKER = re.compile(r"^--- (page|slide) (\d+) ---$")
"""A line that starts page (PDF) or slide (PowerPoint) N in a converted document's text."""


def page_marker(unit: str, number: int) -> str:
    return f"--- {unit} {number} ---"


@dataclass
class Limits:
    """Caps on one conversion; `check_*` raise Unindexable naming the cap that was passed."""

    max_text_chars: int
    """Most characters of text a document may give (the text files' size cap)."""
    max_pages: int = 5000
    """Most pages (PDF), slides or sheets read."""
    max_seconds: float = 120.0
    """Longest a conversion may run; checked between pages, slides and sheets."""
    max_unzipped_bytes: int = 512 * 1024 * 1024
    """Most bytes an Office file's zip may expand to (its members' declared sizes)."""
    max_ratio: int = 200
    """Largest expansion of one zip member over 1 MiB (zip bombs expand a thousandfold)."""
    max_xml_bytes: int = 16 * 1024 * 1024
    """Most bytes of one XML part a Word or PowerPoint file may hold: their readers parse a part
    whole, at about 20 bytes of memory a byte (60 MB of XML took 1.1 GB and 123 s)."""
    started: float = field(default_factory=time.monotonic)

    def check_time(self) -> None:
        if time.monotonic() - self.started > self.max_seconds:
            msg = f"conversion failed: took over {self.max_seconds:g} s"
            raise Unindexable(msg)

    def check_size(self, chars: int) -> None:
        if chars > self.max_text_chars:
            msg = (
                f"over the size cap once converted (more than {self.max_text_chars:,} "
                "characters of text; raise max_file_bytes to index it)"
            )
            raise Unindexable(msg)


def check_zip(archive: zipfile.ZipFile, limits: Limits, *, whole_xml: bool = False) -> None:
    """Refuse a zip whose members would expand past the caps, before anything is unpacked.

    zipfile never reads more than a member's declared size, so the declared sizes bound what
    a reader can unpack, whatever the compressed data holds. `whole_xml`: the reader parses
    each XML part whole (Word, PowerPoint), so no part may pass `max_xml_bytes`.
    """
    total = 0
    for info in archive.infolist():
        total += info.file_size
        if whole_xml and info.filename.endswith(".xml") and info.file_size > limits.max_xml_bytes:
            msg = (
                f"over the size cap once unpacked: its part {info.filename} is "
                f"{info.file_size:,} bytes of XML (more than {limits.max_xml_bytes:,}), which "
                "its reader would hold in memory whole"
            )
            raise Unindexable(msg)
        big = info.file_size > 1 << 20
        if big and info.file_size > limits.max_ratio * max(info.compress_size, 1):
            msg = (
                f"a zip bomb? its member {info.filename} expands {info.file_size:,} bytes from "
                f"{info.compress_size:,} (more than {limits.max_ratio}x)"
            )
            raise Unindexable(msg)
    if total > limits.max_unzipped_bytes:
        msg = f"expands to {total:,} bytes (more than {limits.max_unzipped_bytes:,})"
        raise Unindexable(msg)
