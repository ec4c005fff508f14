"""`BpeCounter`: exact OpenAI counts from `bpe-openai` (`pip install 'ragbudget[bpe]'`).

`bpe-openai` wraps GitHub's Rust `bpe-openai` crate: the same tokens as tiktoken for
`cl100k_base` and `o200k_base` (tests/core/test_bpe.py compares them on the standard library's
sources and its CJK test files), about twice tiktoken's speed, its BPE data inside the wheel (no
download, no cache folder), and `count_till_limit`, which stops reading a text once it is past a
limit: what `count_up_to` uses, so a fits-check of a long text costs what the limit holds.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import sys
from functools import lru_cache
from pathlib import Path
from typing import Any

__all__ = ["BPE_ENCODINGS", "BpeCounter"]

BPE_ENCODINGS = ("cl100k_base", "o200k_base")
"""The encodings whose counts are checked equal to tiktoken's."""


@lru_cache(maxsize=1)
def _bindings() -> Any:
    """bpe-openai's Rust extension, loaded on its own: the package's `__init__` builds
    tiktoken-compatible tables in Python first (0.7 s, and a DeprecationWarning on 3.11),
    which counting does not need."""
    loaded = sys.modules.get("bpe_openai._bindings")
    if loaded is not None:
        return loaded
    try:
        spec = importlib.util.find_spec("bpe_openai")
    except ImportError:
        spec = None
    folders = list(spec.submodule_search_locations or []) if spec is not None else []
    for folder in folders:
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            path = Path(folder) / f"_bindings{suffix}"
            found = importlib.util.spec_from_file_location("bpe_openai._bindings", path)
            if path.is_file() and found is not None and found.loader is not None:
                module = importlib.util.module_from_spec(found)
                found.loader.exec_module(module)
                return module
    msg = "the 'bpe' counter needs bpe-openai: pip install 'ragbudget[bpe]'"
    raise ImportError(msg)


def bpe_available() -> bool:
    """Whether `bpe-openai` can be imported."""
    try:
        _bindings()
    except ImportError:
        return False
    return True


def _clean(text: str) -> str:
    """Lone surrogates as U+FFFD, as tiktoken encodes them (the Rust side takes UTF-8 only)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


class BpeCounter:
    """Exact counts of an OpenAI encoding by `bpe-openai`, identical to tiktoken's.

    Setup:
        `pip install 'ragbudget[bpe]'` (the data is in the wheel: works offline).

    Key init args:
        encoding: `"cl100k_base"` or `"o200k_base"`.
        name: what `TruncationInfo.counter` reports (default `bpe:<encoding>`); the
            `tiktoken:<encoding>` spec builds one named `tiktoken:<encoding>`.

    Instantiate:
        ```python
        from ragbudget import get_counter

        counter = get_counter("bpe:o200k_base")  # or "tiktoken:o200k_base" with bpe installed
        ```

    Use:
        ```python
        counter.count("def add(a, b):\n    return a + b\n")  # the same as tiktoken's
        counter.count_up_to(long_text, 8000)  # > 8000 as soon as 8,000 tokens are passed
        ```
    """

    exact = True
    stops_early = True

    def __init__(self, encoding: str = "o200k_base", *, name: str | None = None) -> None:
        if encoding not in BPE_ENCODINGS:
            msg = f"bpe encoding must be one of {', '.join(BPE_ENCODINGS)}, got {encoding!r}"
            raise ValueError(msg)
        self._tok = _bindings().tokenizer_for_encoding(encoding)
        self.encoding = encoding
        self.name = name or f"bpe:{encoding}"

    def count(self, text: str) -> int:
        try:
            return int(self._tok.count(text))
        except UnicodeEncodeError:
            return int(self._tok.count(_clean(text)))

    def count_up_to(self, text: str, limit: int) -> int:
        """`count(text)` when it is at most `limit`, else `limit + 1` (counting stops there)."""
        if limit < 0:
            return limit + 1
        try:
            found = self._tok.count_till_limit(text, limit)
        except UnicodeEncodeError:
            found = self._tok.count_till_limit(_clean(text), limit)
        return limit + 1 if found is None else int(found)

    def __repr__(self) -> str:
        return f"BpeCounter({self.encoding!r}, name={self.name!r})"
