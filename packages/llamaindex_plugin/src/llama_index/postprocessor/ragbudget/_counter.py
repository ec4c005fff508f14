"""Which token counter a postprocessor with `counter=None` uses.

LlamaIndex keeps its global tokenizer in `llama_index.core.global_tokenizer`; reading
`Settings.tokenizer` creates tiktoken's gpt-3.5-turbo encoding there when it is unset, and so
does any part of LlamaIndex that needs a tokenizer (the sentence splitter, the prompt helper).
So "the global tokenizer is set" does not mean "the user set one". This module reads the
global without creating it and recognises LlamaIndex's own lazily made default by its shape
(`functools.partial(<tiktoken Encoding>.encode, allowed_special="all")`), which is what
`llama_index.core.utils.get_tokenizer` builds.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any, cast

from ragbudget import TokenCounter, get_counter
from ragbudget.exact import default_spec

__all__ = ["SettingsTokenizerCounter", "default_counter", "user_settings_tokenizer"]


class SettingsTokenizerCounter:
    """Counts with the tokenizer set through `Settings.tokenizer`: `len(tokenizer(text))`."""

    name = "llama_index:Settings.tokenizer"
    exact = True

    def __init__(self, tokenizer: Callable[[str], Any]) -> None:
        self.tokenizer = tokenizer

    def count(self, text: str) -> int:
        return len(self.tokenizer(text))

    def __repr__(self) -> str:
        return f"SettingsTokenizerCounter({self.tokenizer!r})"


def _is_llama_index_default(tokenizer: Any) -> bool:
    """True for the tokenizer `get_tokenizer()` creates when nobody set one."""
    if not isinstance(tokenizer, functools.partial):
        return False
    func = tokenizer.func
    owner = getattr(func, "__self__", None)
    return (
        getattr(func, "__name__", None) == "encode"
        and owner is not None
        and type(owner).__module__.startswith("tiktoken")
        and tokenizer.args == ()
        and tokenizer.keywords == {"allowed_special": "all"}
    )


def user_settings_tokenizer() -> Callable[[str], Any] | None:
    """The tokenizer the user set with `Settings.tokenizer = ...`, else None.

    Never reads `Settings.tokenizer` itself, which would create LlamaIndex's default.
    """
    import llama_index.core

    tokenizer = getattr(llama_index.core, "global_tokenizer", None)
    if tokenizer is None or _is_llama_index_default(tokenizer):
        return None
    return cast("Callable[[str], Any]", tokenizer)


_lock = threading.Lock()
_last: tuple[Callable[[str], Any], SettingsTokenizerCounter] | None = None


def default_counter() -> TokenCounter:
    """The counter for `counter=None`: the user's `Settings.tokenizer`, else `exact` (the
    larger of the exact cl100k and o200k counts) when bpe-openai is installed, else the
    estimate (`ragbudget.exact.default_spec`, as the server and the middleware choose)."""
    global _last
    tokenizer = user_settings_tokenizer()
    if tokenizer is None:
        return get_counter(default_spec())
    with _lock:
        if _last is None or _last[0] is not tokenizer:
            _last = (tokenizer, SettingsTokenizerCounter(tokenizer))
        return _last[1]
