"""get_counter(): every spec form, exactness flags, and errors that say what to do."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from ragbudget import (
    CallableCounter,
    CharsCounter,
    EstimateCounter,
    HFCounter,
    TiktokenCounter,
    TokenCounter,
    count_many,
    get_counter,
)
from ragbudget.counters import _from_string


def test_default_is_the_estimator() -> None:
    for spec in (None, "estimate", " estimate "):
        tc = get_counter(spec)
        assert isinstance(tc, EstimateCounter)
        assert tc.name == "estimate"
        assert tc.exact is False
    assert get_counter().count("") == 0
    assert get_counter().count("hello world") > 0


def test_chars_rule() -> None:
    tc = get_counter("chars:4")
    assert isinstance(tc, CharsCounter)
    assert (tc.name, tc.exact) == ("chars:4", False)
    assert tc.count("x" * 17) == 4
    assert get_counter("chars:1").count("abc") == 3
    with pytest.raises(ValueError, match="'chars:N' needs a whole number"):
        get_counter("chars:four")
    with pytest.raises(ValueError, match="chars_per_token must be >= 1"):
        get_counter("chars:0")


def test_tiktoken_encodings_and_models(cl100k: TokenCounter) -> None:
    import tiktoken

    assert (cl100k.name, cl100k.exact) == ("tiktoken:cl100k_base", True)
    text = "Hello, world! 你好，世界。 def f(x): return x ** 2"
    assert cl100k.count(text) == len(tiktoken.get_encoding("cl100k_base").encode_ordinary(text))
    o200k = get_counter("tiktoken:gpt-4o")
    assert o200k.name == "tiktoken:o200k_base"
    assert count_many(o200k, [text, "", "a b"]) == [o200k.count(t) for t in (text, "", "a b")]
    # special tokens are counted as the text they are, never refused
    assert cl100k.count("<|endoftext|>") > 1
    with pytest.raises(ValueError, match="unknown tiktoken encoding or model 'no-such-model'"):
        TiktokenCounter("no-such-model")


def test_tiktoken_missing_file_says_what_to_set(monkeypatch: pytest.MonkeyPatch) -> None:
    import tiktoken

    def offline(name: str) -> None:
        raise ConnectionError("no network")

    monkeypatch.setattr(tiktoken, "get_encoding", offline)
    with pytest.raises(RuntimeError, match="set TIKTOKEN_CACHE_DIR"):
        TiktokenCounter("p50k_base")


def test_missing_extras_say_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "tiktoken", None)
    with pytest.raises(ImportError, match=r"pip install 'ragbudget\[tiktoken\]'"):
        TiktokenCounter("cl100k_base")
    monkeypatch.setitem(sys.modules, "tokenizers", None)
    with pytest.raises(ImportError, match=r"pip install 'ragbudget\[hf\]'"):
        HFCounter("tokenizer.json")


@pytest.fixture(scope="module")
def tokenizer_json(tmp_path_factory: pytest.TempPathFactory, stdlib: Path) -> Path:
    """A real BPE tokenizer trained here on stdlib text (no download needed)."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE(unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = trainers.BpeTrainer(vocab_size=2000, special_tokens=["[UNK]"], show_progress=False)
    files = [str(p) for p in sorted((stdlib / "json").glob("*.py"))]
    tok.train(files, trainer)
    path = tmp_path_factory.mktemp("hf") / "tokenizer.json"
    tok.save(str(path))
    return path


def test_hf_tokenizer_from_path_and_instance(tokenizer_json: Path) -> None:
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(tokenizer_json))
    text = "def decode(self, s):\n    return self.raw_decode(s)"
    expected = len(tok.encode(text, add_special_tokens=False).ids)
    by_path = get_counter(f"hf:{tokenizer_json}")
    assert isinstance(by_path, HFCounter)
    assert (by_path.name, by_path.exact) == ("hf:tokenizer.json", True)
    assert by_path.count(text) == expected
    by_instance = get_counter(tok)
    assert by_instance.count(text) == expected
    assert count_many(by_instance, [text, text]) == [expected, expected]
    with pytest.raises(FileNotFoundError, match="hf tokenizer file not found"):
        get_counter("hf:/no/such/tokenizer.json")


def test_callables_and_protocol_instances() -> None:
    tc = get_counter(lambda s: len(s.split()))
    assert isinstance(tc, CallableCounter)
    assert tc.exact is False
    assert tc.name.startswith("callable:")
    assert tc.count("a b c") == 3

    class Mine:
        name = "mine"
        exact = True

        def count(self, text: str) -> int:
            return len(text)

    mine = Mine()
    assert get_counter(mine) is mine
    assert isinstance(mine, TokenCounter)
    for bad in (-1, 1.5, "3", True):
        with pytest.raises(ValueError, match="must return an int >= 0"):
            get_counter(lambda s, b=bad: b).count("x")  # type: ignore[misc]


def test_bad_specs_name_the_forms() -> None:
    for spec in ("nope", "estimate:xx:yy", "hf:", "tiktoken-cl100k"):
        _from_string.cache_clear()
        with pytest.raises(ValueError, match="unknown counter spec"):
            get_counter(spec)
    with pytest.raises(TypeError, match="counter must be a spec string"):
        get_counter(42)  # type: ignore[arg-type]


def test_counters_are_cached() -> None:
    assert get_counter("chars:3") is get_counter("chars:3")


def test_bundled_tiktoken_files(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import importlib.util

    from ragbudget import use_bundled_tiktoken_files

    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    assert use_bundled_tiktoken_files() is True
    assert Path(os.environ["TIKTOKEN_CACHE_DIR"]) == tmp_path  # the caller's choice stands
    monkeypatch.delenv("TIKTOKEN_CACHE_DIR")
    assert use_bundled_tiktoken_files() is True
    cache = Path(os.environ["TIKTOKEN_CACHE_DIR"])
    assert cache.parts[-2:] == ("_static", "tiktoken_cache")
    assert len(list(cache.iterdir())) >= 2  # cl100k_base and o200k_base
    monkeypatch.delenv("TIKTOKEN_CACHE_DIR")
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    assert use_bundled_tiktoken_files() is False
    assert "TIKTOKEN_CACHE_DIR" not in os.environ
