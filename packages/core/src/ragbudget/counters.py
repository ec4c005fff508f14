"""Token counters: one small protocol, several backends, one factory (`get_counter`).

Presets for models without a published tokenizer, and safety margins: a counter scaled up
(`ScaledCounter`).

Anthropic publishes no tokenizer for Claude 3 and later; its own advice is to estimate and
keep a buffer. The `claude` preset is ragbudget's default estimate (safe for both cl100k and
o200k) times `CLAUDE_FACTOR`: Claude 3.x tokenizers are reported to need 1.2-1.3x o200k's
tokens, and Anthropic says its newest tokenizer uses up to 1.35x more than the previous one,
so 1.3 x 1.35 = 1.755 bounds both. It is an estimate (`exact=False`), on the safe side.
"""

from __future__ import annotations

import importlib.util
import math
import os
from collections.abc import Callable, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from ragbudget.estimate import DEFAULT_TARGET, estimate_tokens
from ragbudget.estimate import TARGETS as ESTIMATE_TARGETS

__all__ = [
    "CLAUDE_FACTOR",
    "CallableCounter",
    "CharsCounter",
    "CounterSpec",
    "EstimateCounter",
    "HFCounter",
    "LazyCounts",
    "ScaledCounter",
    "TiktokenCounter",
    "TokenCounter",
    "claude_counter",
    "count_many",
    "count_up_to",
    "get_counter",
    "stops_early",
    "use_bundled_tiktoken_files",
]


@runtime_checkable
class TokenCounter(Protocol):
    """Anything that counts tokens. Backends with a faster batch path add `count_batch`; those
    that can stop reading at a limit add `count_up_to(text, limit) -> int` and say so with
    `stops_early = True` (see `count_up_to`)."""

    @property
    def name(self) -> str:
        """A short name reported in `TruncationInfo.counter`, e.g. 'tiktoken:cl100k_base'."""
        ...

    @property
    def exact(self) -> bool:
        """True only for a real tokenizer; estimates say False."""
        ...

    def count(self, text: str) -> int:
        """Number of tokens in `text` (>= 0)."""
        ...


def count_many(counter: TokenCounter, texts: Sequence[str]) -> list[int]:
    """Count each text, through the counter's batch method when it has one."""
    batch = getattr(counter, "count_batch", None)
    if batch is not None and len(texts) > 1:
        return list(batch(list(texts)))
    return [counter.count(text) for text in texts]


def count_up_to(counter: TokenCounter, text: str, limit: int) -> int:
    """`counter.count(text)` when it is at most `limit`, else some number above `limit`.

    For fits-checks, which only need to know whether a text is within a limit: a counter with
    a `count_up_to(text, limit)` method (`BpeCounter`, and the wrappers of one) stops reading
    once past the limit, so checking a long text costs what the limit holds; any other counter
    counts the whole text.
    """
    method = getattr(counter, "count_up_to", None)
    if method is not None:
        return int(method(text, limit))
    return counter.count(text)


def stops_early(counter: TokenCounter) -> bool:
    """Whether `count_up_to(counter, ...)` stops reading at the limit (a wrapper asks the
    counter it wraps), so a fits-check of a long text is cheap."""
    return bool(getattr(counter, "stops_early", False))


class LazyCounts:
    """Token counts of `texts` (in the order they will be looked at), each counted on first use.

    For callers that walk a ranking and stop early: `fit(strategy="stop")` never looks past
    the first chunk that does not fit, so a budget that holds 40 of 1,000 retrieved chunks
    counts about 40 of them. A counter with a batch method (tiktoken's threads) gets batches
    of 8, then 16, up to 64 texts; any other counter counts one text at a time, so nothing is
    counted in vain.
    """

    def __init__(self, counter: TokenCounter, texts: Sequence[str]) -> None:
        self._counter, self._texts = counter, texts
        self._counts: list[int] = []
        self._batch = 8 if getattr(counter, "count_batch", None) is not None else 1

    def __len__(self) -> int:
        return len(self._texts)

    def __getitem__(self, index: int) -> int:
        while index >= len(self._counts):
            start = len(self._counts)
            self._counts += count_many(self._counter, self._texts[start : start + self._batch])
            if self._batch > 1:
                self._batch = min(2 * self._batch, 64)
        return self._counts[index]


class EstimateCounter:
    """The default counter: a dependency-free estimate calibrated against tiktoken.

    No tokenizer needed, deterministic, and biased to the safe side: on held-out real text
    (code, prose, markdown, JSON, CJK, Cyrillic/Greek, other European languages, logs, emoji
    chat) at most 1% of each family's chunks is under-counted by more than 8.1% (the most:
    Arabic, Hebrew, Indic, Thai and other scripts against `"o200k_base"`; 6.9% for the
    default), and the median error is at most 8% per family against the encoding a target is
    calibrated to. Text the model does not recognise (DNA, base64, keys, digests, symbol soup,
    rare scripts such as Cherokee or Odia) is counted piece by piece as the tokenizers split
    it: on 15 such families no chunk of 200 characters or more is under-counted by more than
    10%. Windows line breaks count as line breaks, and no-break, thin and other Unicode spaces
    as spaces and their own tokens, as the tokenizers count them. docs/estimator.md has the
    tables. Standard library only.

    Key init args:
        target: `None` (default) is safe for both `cl100k_base` and `o200k_base`, tight
            against whichever counts more (cl100k on CJK, Cyrillic and other non-English
            text, where o200k needs 10-30% fewer tokens). `"cl100k_base"` or
            `"o200k_base"` is calibrated to that encoding alone: tighter, but only safe for it.

    Instantiate:
        ```python
        from ragbudget import get_counter
        from ragbudget.counters import EstimateCounter

        counter = get_counter()  # same as get_counter("estimate") or EstimateCounter()
        gpt4o = get_counter("estimate:o200k_base")  # same as EstimateCounter("o200k_base")
        ```

    Use:
        ```python
        counter.count("def add(a, b):\n    return a + b\n")  # -> an int close to tiktoken's
        ```
    """

    exact = False

    def __init__(self, target: str | None = None) -> None:
        if target is not None and target not in ESTIMATE_TARGETS:
            msg = f"target must be None or one of {ESTIMATE_TARGETS}, got {target!r}"
            raise ValueError(msg)
        self.target = target
        self._target = target or DEFAULT_TARGET
        self.name = "estimate" if target is None else f"estimate:{target}"

    def count(self, text: str) -> int:
        return estimate_tokens(text, self._target)

    def __repr__(self) -> str:
        return "EstimateCounter()" if self.target is None else f"EstimateCounter({self.target!r})"


class CharsCounter:
    """The `len(text) // n` rule of thumb, for comparison and for callers who want it."""

    exact = False

    def __init__(self, chars_per_token: int = 4) -> None:
        if isinstance(chars_per_token, bool) or not isinstance(chars_per_token, int):
            msg = f"chars_per_token must be a positive int, got {chars_per_token!r}"
            raise TypeError(msg)
        if chars_per_token < 1:
            msg = f"chars_per_token must be >= 1, got {chars_per_token}"
            raise ValueError(msg)
        self.chars_per_token = chars_per_token
        self.name = f"chars:{chars_per_token}"

    def count(self, text: str) -> int:
        return len(text) // self.chars_per_token

    def __repr__(self) -> str:
        return f"CharsCounter({self.chars_per_token})"


_TIKTOKEN_HELP = (
    "tiktoken could not load encoding {enc!r} ({err}). tiktoken downloads its BPE files on "
    "first use; offline, set TIKTOKEN_CACHE_DIR to a folder that holds them (llama-index-core "
    "ships cl100k_base and o200k_base in llama_index/core/_static/tiktoken_cache)."
)


def use_bundled_tiktoken_files() -> bool:
    """Point tiktoken at the BPE files llama-index-core ships (cl100k_base, o200k_base) when
    `TIKTOKEN_CACHE_DIR` is not set, so tiktoken counters work offline. True when the variable
    is set (by the caller or here). llama-index-core is located, not imported."""
    if "TIKTOKEN_CACHE_DIR" in os.environ:
        return True
    try:
        spec = importlib.util.find_spec("llama_index.core")
    except ImportError:
        return False
    for location in (spec.submodule_search_locations or []) if spec else []:
        cache = Path(location) / "_static" / "tiktoken_cache"
        if cache.is_dir():
            os.environ["TIKTOKEN_CACHE_DIR"] = str(cache)
            return True
    return False


class TiktokenCounter:
    """Exact counts with an OpenAI encoding (`pip install 'ragbudget[tiktoken]'`)."""

    exact = True

    def __init__(self, encoding: str = "cl100k_base") -> None:
        try:
            import tiktoken
        except ImportError as exc:  # pragma: no cover - exercised by the missing-extra test
            msg = "the 'tiktoken' counter needs tiktoken: pip install 'ragbudget[tiktoken]'"
            raise ImportError(msg) from exc
        try:
            enc = tiktoken.get_encoding(encoding)
        except ValueError:
            try:
                enc = tiktoken.encoding_for_model(encoding)
            except KeyError:
                msg = (
                    f"unknown tiktoken encoding or model {encoding!r}; "
                    f"known encodings: {', '.join(tiktoken.list_encoding_names())}"
                )
                raise ValueError(msg) from None
            except Exception as exc:
                raise RuntimeError(_TIKTOKEN_HELP.format(enc=encoding, err=exc)) from exc
        except Exception as exc:
            raise RuntimeError(_TIKTOKEN_HELP.format(enc=encoding, err=exc)) from exc
        self._enc = enc
        self.encoding = enc.name
        self.name = f"tiktoken:{enc.name}"

    def count(self, text: str) -> int:
        return len(self._enc.encode_ordinary(text))

    def count_batch(self, texts: list[str]) -> list[int]:
        # tiktoken's batch path spreads texts over a thread pool: worth it for large inputs on
        # several cores, pure overhead for many short strings.
        threads = min(8, os.cpu_count() or 1)
        if threads < 2 or sum(map(len, texts)) < 1_000_000:
            encode = self._enc.encode_ordinary
            return [len(encode(text)) for text in texts]
        ids = self._enc.encode_ordinary_batch(texts, num_threads=threads)
        return [len(x) for x in ids]

    def __repr__(self) -> str:
        return f"TiktokenCounter({self.encoding!r})"


class HFCounter:
    """Exact counts with a Hugging Face `tokenizers` tokenizer (`ragbudget[hf]`)."""

    exact = True

    def __init__(self, tokenizer: Any, *, name: str | None = None) -> None:
        try:
            from tokenizers import Tokenizer
        except ImportError as exc:  # pragma: no cover - exercised by the missing-extra test
            msg = "the 'hf' counter needs tokenizers: pip install 'ragbudget[hf]'"
            raise ImportError(msg) from exc
        if isinstance(tokenizer, str | os.PathLike):
            path = Path(tokenizer)
            if not path.is_file():
                msg = f"hf tokenizer file not found: {str(path)!r} (give a tokenizer.json path)"
                raise FileNotFoundError(msg)
            tokenizer = Tokenizer.from_file(str(path))
            name = name or f"hf:{path.name}"
        if not isinstance(tokenizer, Tokenizer):
            kind = type(tokenizer).__name__
            msg = f"tokenizer must be a tokenizers.Tokenizer or a path, got {kind}"
            raise TypeError(msg)
        self._tok = tokenizer
        self.name = name or "hf:tokenizer"

    def count(self, text: str) -> int:
        return len(self._tok.encode(text, add_special_tokens=False).ids)

    def count_batch(self, texts: list[str]) -> list[int]:
        encs = self._tok.encode_batch(texts, add_special_tokens=False)
        return [len(e.ids) for e in encs]

    def __repr__(self) -> str:
        return f"HFCounter(name={self.name!r})"


class CallableCounter:
    """Wraps any `Callable[[str], int]`; its results are checked (int, >= 0)."""

    def __init__(
        self, fn: Callable[[str], int], *, name: str | None = None, exact: bool = False
    ) -> None:
        if not callable(fn):
            msg = f"counter must be callable, got {type(fn).__name__}"
            raise TypeError(msg)
        self._fn = fn
        self.exact = exact
        self.name = name or f"callable:{getattr(fn, '__qualname__', type(fn).__name__)}"

    def count(self, text: str) -> int:
        value = self._fn(text)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            msg = f"counter {self.name} must return an int >= 0, got {value!r}"
            raise ValueError(msg)
        return value

    def __repr__(self) -> str:
        return f"CallableCounter(name={self.name!r})"


CLAUDE_FACTOR = 1.755
"""Claude's tokens per o200k token, at most, as published (1.3 for Claude 3.x, times 1.35)."""


class ScaledCounter:
    """`ceil(base.count(text) * factor)`: a counter for a heavier tokenizer, or with a margin.

    Key init args:
        base: the counter to scale (an estimate, or a real tokenizer of a lighter model).
        factor: how many times more tokens to count (>= 1).
        name: what `TruncationInfo.counter` and responses report.

    Use:
        ```python
        from ragbudget import get_counter

        claude = get_counter("claude")  # the default estimate x 1.755
        ```
    """

    exact = False

    def __init__(self, base: TokenCounter, factor: float, name: str) -> None:
        if isinstance(factor, bool) or not isinstance(factor, int | float) or not factor >= 1:
            msg = f"factor must be a number >= 1, got {factor!r}"
            raise ValueError(msg)
        self.base, self.factor, self.name = base, float(factor), name

    def count(self, text: str) -> int:
        return math.ceil(self.base.count(text) * self.factor)

    @property
    def stops_early(self) -> bool:
        return stops_early(self.base)

    def count_up_to(self, text: str, limit: int) -> int:
        """As `count`, stopping once the base count is past what `limit` allows."""
        if not stops_early(self.base):
            return self.count(text)  # counted whole anyway: the real count
        base_limit = max(math.floor(limit / self.factor), -1)
        while math.ceil((base_limit + 1) * self.factor) <= limit:
            base_limit += 1
        tokens = count_up_to(self.base, text, base_limit)
        return limit + 1 if tokens > base_limit else math.ceil(tokens * self.factor)

    def __repr__(self) -> str:
        return f"ScaledCounter({self.base!r}, {self.factor}, {self.name!r})"


def claude_counter() -> ScaledCounter:
    """The `claude` preset: the default estimate times `CLAUDE_FACTOR`."""
    return ScaledCounter(EstimateCounter(), CLAUDE_FACTOR, "claude")


CounterSpec = TokenCounter | str | Callable[[str], int] | None
"""What `get_counter` (and every `counter=` argument) accepts."""


@lru_cache(maxsize=32)
def _from_string(spec: str) -> TokenCounter:
    kind, _, arg = spec.partition(":")
    kind = kind.strip().lower()
    if kind == "estimate":
        if not arg:
            return EstimateCounter()
        if arg.strip() not in ESTIMATE_TARGETS:
            msg = (
                f"unknown counter spec {spec!r}: 'estimate:<target>' takes one of "
                f"{', '.join(ESTIMATE_TARGETS)} (or plain 'estimate', safe for both)"
            )
            raise ValueError(msg)
        return EstimateCounter(arg.strip())
    if kind == "claude" and not arg:
        return claude_counter()
    if kind == "chars":
        try:
            n = int(arg) if arg else 4
        except ValueError:
            msg = f"counter spec {spec!r}: 'chars:N' needs a whole number N, e.g. 'chars:4'"
            raise ValueError(msg) from None
        return CharsCounter(n)
    if kind == "tiktoken":
        return _tiktoken_spec(arg.strip() or "cl100k_base")
    if kind == "exact" and not arg:
        from ragbudget.bpe import bpe_available
        from ragbudget.exact import LargestCounter

        if not bpe_available() and importlib.util.find_spec("tiktoken") is None:
            msg = "the 'exact' counter needs bpe-openai: pip install 'ragbudget[bpe]'"
            raise ImportError(msg)
        pair = (_tiktoken_spec("cl100k_base"), _tiktoken_spec("o200k_base"))
        return LargestCounter(*pair, name="exact")
    if kind == "bpe":
        from ragbudget.bpe import BpeCounter

        return BpeCounter(arg.strip() or "o200k_base")
    if kind == "hf" and arg:
        return HFCounter(arg)
    msg = (
        f"unknown counter spec {spec!r}: use 'estimate', 'exact', 'claude', 'chars:N', "
        "'tiktoken:<encoding or model>', 'bpe:<encoding>', "
        "'hf:<path to tokenizer.json>', a tokenizers.Tokenizer, or a callable str -> int"
    )
    raise ValueError(msg)


def _tiktoken_spec(arg: str) -> TokenCounter:
    """`tiktoken:<encoding or model>`: the fastest installed backend that counts exactly as
    tiktoken does: `bpe-openai` for cl100k_base and o200k_base (same tokens, about twice as
    fast, stops at a limit), else tiktoken itself. Named `tiktoken:<encoding>` either way."""
    from ragbudget.bpe import BPE_ENCODINGS, BpeCounter, bpe_available

    encoding = arg
    if arg not in BPE_ENCODINGS and importlib.util.find_spec("tiktoken") is not None:
        import tiktoken.model

        try:
            encoding = tiktoken.model.encoding_name_for_model(arg)
        except KeyError:
            encoding = arg
    if encoding in BPE_ENCODINGS and bpe_available():
        return BpeCounter(encoding, name=f"tiktoken:{encoding}")
    return TiktokenCounter(arg)


def get_counter(spec: CounterSpec = None) -> TokenCounter:
    """Build a token counter from a spec.

    - `None` or `"estimate"`: the dependency-free estimator (the default everywhere), safe
      for both cl100k_base and o200k_base; `"estimate:cl100k_base"` / `"estimate:o200k_base"`
      are tighter estimates calibrated to one encoding.
    - `"exact"`: the larger of the exact cl100k_base and o200k_base counts (`bpe-openai`
      when installed, `ragbudget[bpe]`, else tiktoken): the estimate's promise, exactly.
    - `"claude"`: for Claude models (no published tokenizer): the estimate times 1.755, the
      largest published inflation of Claude's tokenizers over o200k (`ragbudget.counters`).
    - `"chars:N"`: `len(text) // N`.
    - `"tiktoken:<encoding or model>"`, e.g. `"tiktoken:cl100k_base"`, `"tiktoken:gpt-4o"`:
      tiktoken's counts, by `bpe-openai` when it is installed (`ragbudget[bpe]`: the same
      tokens, faster) for cl100k_base and o200k_base, else by tiktoken.
    - `"bpe:<encoding>"`: `bpe-openai` itself (`"bpe:o200k_base"`, `"bpe:cl100k_base"`).
    - `"hf:<path to tokenizer.json>"`, or a `tokenizers.Tokenizer` instance.
    - any `TokenCounter`, returned as is; any other callable `str -> int`.
    """
    if spec is None:
        return _from_string("estimate")
    if isinstance(spec, str):
        return _from_string(spec.strip())
    if isinstance(spec, TokenCounter):
        return spec
    if type(spec).__module__.startswith("tokenizers"):
        return HFCounter(spec)
    if callable(spec):
        return CallableCounter(spec)
    msg = f"counter must be a spec string, a TokenCounter or a callable, got {type(spec).__name__}"
    raise TypeError(msg)
