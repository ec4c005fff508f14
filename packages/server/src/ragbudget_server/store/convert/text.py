"""Plain text in any common encoding: UTF-8 first, then a byte-order mark, then UTF-16 without
one (by where its NUL bytes fall), then detection.

Detection is charset-normalizer's (the detector requests uses): it decodes the bytes with each
plausible encoding and keeps the ones whose text is least "chaotic" and most like a language.
Its answer is taken only when it is not a guess: at least `MIN_DETECT_BYTES` bytes that are not
UTF-8, and a decoding without mess. Ties between single-byte Western encodings (cp1250 and
cp1252 read `où` differently and score the same) go to cp1252, Windows' Western default and a
superset of latin-1's printable characters.
"""

from __future__ import annotations

import codecs

from charset_normalizer import from_bytes

from ragbudget_server.store.convert.errors import Unindexable

__all__ = ["MIN_DETECT_BYTES", "decode_text", "looks_binary"]

MIN_DETECT_BYTES = 32
"""Fewer non-UTF-8 bytes than this are too few to tell an encoding from: such a file is skipped."""

_SNIFF_BYTES = 8192
_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)
_PREFERRED = "cp1252"


def _bom(data: bytes) -> str | None:
    return next((name for bom, name in _BOMS if data.startswith(bom)), None)


def _utf16_without_bom(data: bytes) -> str | None:
    """`utf-16-le` or `utf-16-be` for text written so with no byte-order mark (Windows tools
    do): most of the first 8 KB's code units have a NUL high byte on one side and none on the
    other, and its first MiB decodes to printable text. None otherwise (a binary file's NULs
    fall anywhere, or decode to control characters)."""
    sample = data[: _SNIFF_BYTES & ~1]
    pairs = len(sample) // 2
    if pairs < 2 or len(data) % 2:
        return None
    odd = sample[1::2].count(0) / pairs  # the high byte of little-endian ASCII
    even = sample[0::2].count(0) / pairs
    if odd >= 0.6 and even == 0:
        encoding = "utf-16-le"
    elif even >= 0.6 and odd == 0:
        encoding = "utf-16-be"
    else:
        return None
    try:
        text = data[: 1 << 20].decode(encoding)
    except UnicodeDecodeError:
        return None
    controls = sum(1 for ch in text if ch < " " and ch not in "\t\n\r\f")
    return encoding if controls <= len(text) // 1000 else None


def looks_binary(data: bytes) -> bool:
    """NUL bytes near the start, in a file without a UTF-16/32 byte-order mark that is not
    UTF-16 text either."""
    if _bom(data) is not None or b"\x00" not in data[:_SNIFF_BYTES]:
        return False
    return _utf16_without_bom(data) is None


def decode_text(data: bytes) -> str:
    """`data` as text, or Unindexable naming why not (binary, or no encoding fits it)."""
    bom = _bom(data)
    if bom is not None:
        try:
            return data.decode(bom).removeprefix("\ufeff")
        except UnicodeDecodeError as exc:
            msg = f"not {bom} text despite its byte-order mark ({exc.reason} at byte {exc.start})"
            raise Unindexable(msg) from None
    if b"\x00" in data[:_SNIFF_BYTES]:
        utf16 = _utf16_without_bom(data)
        if utf16 is None:
            raise Unindexable("binary (NUL bytes)")
        try:
            return data.decode(utf16)
        except UnicodeDecodeError as exc:  # past the first MiB the check read
            msg = f"not {utf16} text past its first MiB ({exc.reason} at byte {exc.start})"
            raise Unindexable(msg) from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        where = f"{exc.reason} at byte {exc.start}"
    if len(data) < MIN_DETECT_BYTES:
        msg = f"not UTF-8 text ({where}), and too short ({len(data)} bytes) to detect its encoding"
        raise Unindexable(msg)
    matches = [m for m in from_bytes(data[: 1 << 20]) if m.percent_chaos == 0.0]
    if not matches:
        msg = f"not UTF-8 text ({where}), and no common encoding reads it as text"
        raise Unindexable(msg)
    best = matches[0]
    for match in matches:
        tied = match.percent_coherence == best.percent_coherence
        if tied and _PREFERRED in match.could_be_from_charset:
            best = match
            break
    encoding = _PREFERRED if _PREFERRED in best.could_be_from_charset else best.encoding
    try:
        return data.decode(encoding)
    except UnicodeDecodeError:  # detected on the first MiB only
        msg = f"not UTF-8 text ({where}), and not {encoding} past its first MiB"
        raise Unindexable(msg) from None
