"""The bpe-openai counter: tiktoken's tokens on real text, its early stop, and the specs."""

from __future__ import annotations

import sysconfig
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from ragbudget import get_counter, use_bundled_tiktoken_files
from ragbudget.bpe import BPE_ENCODINGS, BpeCounter
from ragbudget.counters import ScaledCounter, TiktokenCounter, count_up_to, stops_early
from ragbudget.fitting import largest_cut
from ragbudget.limits import WalledCounter, Walls

STDLIB = Path(sysconfig.get_paths()["stdlib"])


def _real_texts() -> list[str]:
    """The standard library's sources (the first 120 modules) and its CJK test files."""
    texts = [
        p.read_text(encoding="utf-8", errors="replace") for p in sorted(STDLIB.glob("*.py"))[:120]
    ]
    cjk = STDLIB / "test" / "cjkencodings"
    for path in sorted(cjk.glob("*.txt")):
        if path.stem.endswith("-utf8"):
            texts.append(path.read_text(encoding="utf-8"))
        else:
            try:
                texts.append(path.read_bytes().decode(path.stem.replace("_", "-")))
            except (LookupError, UnicodeDecodeError):
                continue
    return texts


@pytest.fixture(scope="module")
def real_texts() -> list[str]:
    texts = _real_texts()
    assert len(texts) > 120 and any(ord(c) > 0x3000 for c in texts[-1])
    return texts


@pytest.mark.parametrize("encoding", BPE_ENCODINGS)
def test_counts_equal_tiktoken_on_real_text(encoding: str, real_texts: list[str]) -> None:
    assert use_bundled_tiktoken_files()
    tik, bpe = TiktokenCounter(encoding), BpeCounter(encoding)
    for text in real_texts:
        assert bpe.count(text) == tik.count(text)
    for odd in ("", "<|endoftext|>", "x\ud800y", "\r\n\u00a0\u2009 ", "🙂" * 50):
        assert bpe.count(odd) == tik.count(odd)


@given(st.text(max_size=300), st.integers(-2, 120))
def test_count_up_to_is_the_count_or_over(text: str, limit: int) -> None:
    counter = get_counter("bpe:o200k_base")
    whole = counter.count(text)
    stopped = count_up_to(counter, text, limit)
    assert stopped == whole if whole <= limit else stopped > limit
    for wrapped in (
        ScaledCounter(counter, 1.15, "x"),
        WalledCounter(counter, Walls(50, chars=150, bytes=200)),
    ):
        full = wrapped.count(text)
        early = count_up_to(wrapped, text, limit)
        assert early == full if full <= limit else early > limit


def test_specs_prefer_bpe_with_tiktoken_names() -> None:
    for spec, name in (
        ("tiktoken:o200k_base", "tiktoken:o200k_base"),
        ("tiktoken:gpt-4o", "tiktoken:o200k_base"),
        ("tiktoken:cl100k_base", "tiktoken:cl100k_base"),
        ("bpe:cl100k_base", "bpe:cl100k_base"),
        ("bpe", "bpe:o200k_base"),
    ):
        counter = get_counter(spec)
        assert isinstance(counter, BpeCounter), spec
        assert (counter.name, counter.exact, stops_early(counter)) == (name, True, True)
    assert not stops_early(get_counter()) and not stops_early(get_counter("claude"))
    with pytest.raises(ValueError, match="bpe encoding must be one of cl100k_base, o200k_base"):
        get_counter("bpe:p50k_base")


def test_largest_cut_is_the_last_point_that_fits() -> None:
    text = "".join(f"    line {i} = call(arg_{i}, {i * 7})\n" for i in range(3000))
    points = [i + 1 for i, c in enumerate(text) if c == "\n"]
    for spec in ("bpe:o200k_base", "estimate", "chars:3"):
        counter = get_counter(spec)
        for limit in (0, 5, 700, 4000):
            fitted = largest_cut(text, points, limit, counter)
            if fitted is None:
                assert counter.count(text[: points[0]]) > limit
                continue
            assert fitted.tokens == counter.count(fitted.text) <= limit
            after = points.index(fitted.size) + 1
            assert after == len(points) or counter.count(text[: points[after]]) > limit


def test_the_exact_spec_is_the_larger_of_both_encodings(real_texts: list[str]) -> None:
    """`exact` keeps the estimate's promise (at or above both encodings) with no margin."""
    exact = get_counter("exact")
    assert exact.name == "exact" and exact.exact and stops_early(exact)
    cl100k, o200k = BpeCounter("cl100k_base"), BpeCounter("o200k_base")
    larger_by = set()
    for text in [*real_texts[:40], *real_texts[-6:], "u\ufeff" * 300, "ix\u00ad" * 200]:
        pair = (cl100k.count(text), o200k.count(text))
        assert exact.count(text) == max(pair)
        larger_by.add(pair[0] > pair[1])
        limit = max(pair) // 2
        assert count_up_to(exact, text, limit) > limit  # stops past the limit
        assert count_up_to(exact, text, max(pair)) == max(pair)
    assert larger_by == {True, False}  # each encoding is the larger one somewhere


def test_the_guarded_surfaces_default_to_exact() -> None:
    from ragbudget.exact import LargestCounter, default_spec

    assert default_spec() == "exact"  # bpe-openai is in the workspace
    with pytest.raises(ValueError, match="counters"):
        LargestCounter(BpeCounter("o200k_base"), name="one")
