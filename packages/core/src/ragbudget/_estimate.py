"""Dependency-free token estimate (first version; calibrated in a later step)."""

from __future__ import annotations

import re

__all__ = ["estimate_tokens"]

_PIECE = re.compile(
    r"[A-Za-z]+|\d{1,3}|[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af\uf900-\ufaff]|"
    r"[^\sA-Za-z\d]+|\s+"
)


def estimate_tokens(text: str) -> int:
    """Estimate how many tokens a byte-pair tokenizer makes of `text` (never negative)."""
    total = 0
    for match in _PIECE.finditer(text):
        piece = match.group()
        first = piece[0]
        if first.isspace():
            total += 0 if len(piece) == 1 else 1 + len(piece) // 8
        elif first.isascii() and first.isalpha():
            total += 1 + (len(piece) - 1) // 6
        elif first.isdigit():
            total += 1
        elif len(piece) == 1 and ord(first) > 0x3000:
            total += 1
        else:
            total += max(1, len(piece.encode("utf-8")) // 2)
    return total
