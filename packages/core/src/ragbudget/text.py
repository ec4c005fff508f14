"""Text helpers the core and the server share: quoting a caller's input in a message, a count
in words, and reading Chinese, Japanese and Korean text as terms.

- `shown`: repeating a caller's input in a message without repeating all of it. An error that
  echoes its argument is only as bounded as the argument: a 1 MB `source` must not come back
  as a 1 MB error. Every message that quotes caller input goes through `shown`.
- `counted`: a count and its unit as a message says it, `1 token` and `2 tokens`: a budget or
  a count that can be 1 goes through it.
- `CJK_RUN`, `CJK_PIECE`, `bigrams`: Chinese, Japanese and Korean runs have no spaces between
  words, so they are read as their overlapping character bigrams (`東京都` -> `東京`, `京都`),
  as Lucene's CJK analyzer does, and a question and a text in those languages share terms
  without a dictionary. The store's lexical index and the evidence cuts' query words both read
  them so.
"""

from __future__ import annotations

import re

__all__ = ["CJK", "CJK_PIECE", "CJK_RUN", "SHOWN_CHARS", "bigrams", "counted", "shown"]

SHOWN_CHARS = 80
"""Most characters of a caller's input a message repeats."""


def shown(value: object, limit: int = SHOWN_CHARS) -> str:
    """`repr(value)`, cut to its first `limit` characters plus `…` and the length when longer.

    >>> shown("x" * 100, limit=5)
    "'xxxxx'… (100 characters)"
    """
    if isinstance(value, str):
        if len(value) <= limit:
            return repr(value)
        return f"{value[:limit]!r}… ({len(value):,} characters)"
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}…"


def counted(count: int, unit: str) -> str:
    """`count` and `unit` (singular) in words: the unit takes an `s` unless `count` is 1.

    >>> counted(1, "token"), counted(2_500, "token")
    ('1 token', '2,500 tokens')
    """
    return f"{count:,} {unit}" if count == 1 else f"{count:,} {unit}s"


CJK = (
    "\u1100-\u11ff\u2e80-\u2fdf\u3040-\u30ff\u3100-\u312f\u3130-\u318f\u31a0-\u31ff"
    "\u3400-\u4dbf\u4e00-\u9fff\ua960-\ua97f\uac00-\ud7ff\uf900-\ufaff\uff66-\uff9f"
    "\U00020000-\U0003134f"
)
"""Hangul, CJK radicals and punctuation, kana, bopomofo, the CJK ideographs and their
extensions, and half-width kana (a character class's body)."""
CJK_RUN = re.compile(f"[{CJK}]+")
"""A run of CJK characters (`finditer` finds each run of a text)."""
CJK_PIECE = re.compile(f"([{CJK}]+)")
"""Splits a word into its CJK runs and what lies between them (`re.split` keeps the runs)."""


def bigrams(run: str) -> list[str]:
    """A CJK run's overlapping character bigrams; a one-character run is its own.

    >>> bigrams("東京都")
    ['東京', '京都']
    """
    return [run] if len(run) < 2 else [run[i : i + 2] for i in range(len(run) - 1)]
