"""Text crafted against the default estimate (issue 38, "walls hold on any text").

The server counts text with the default estimate plus 10% (`ESTIMATE_MARGINS`), so an
under-count `u` must keep `1 / (1 - u) <= 1.10`: at most about 9% under either tokenizer,
measured by the tokenizers themselves (tiktoken's cl100k_base and o200k_base). The kinds come
from `tools/estimator/fuzz.py` (`CRAFTED`): ASCII letters beside non-ASCII characters that no
token joins to them (`ragbudget.estimate._glued`). Kinds the estimate does not hold yet are
listed in `NOT_HELD`, with their figures in docs/estimator.md.
"""

from __future__ import annotations

import random
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from ragbudget import get_counter
from ragbudget.estimate import estimate_tokens
from ragbudget.estimate._data import load
from ragbudget.estimate._floor import word_tokens
from ragbudget.estimate._glued import Glued, glued_parts, glued_set, pair_cuts
from ragbudget.estimate._text import vocabulary

sys.path.insert(0, str(Path(__file__).parents[2] / "tools" / "estimator"))

import fuzz

MARGIN = 1.10  # the server's margin on text (ragbudget_server.mcp.settings.ESTIMATE_MARGINS)
ENCODINGS = ("cl100k_base", "o200k_base")
NOT_HELD = {
    # source code with a zero-width character after 3 letters in 10: 10% under cl100k at the
    # 99th percentile, 12% at worst (letters cut from their words cost more than a word does)
    "zero-width in source",
    # runs of curly quotes, daggers and the like: 13% under cl100k at the 99th percentile, 14%
    # at worst; where tokens hold a run (`——`, `……`) the merges' order decides where it is cut
    "Unicode punctuation runs",
    # source code with a soft hyphen after a letter in 4: 14% under cl100k, 11% under o200k at
    # the 99th percentile (15% and 12% at worst): pieces of words (`le`, `me`) cost a token each
    "soft hyphens in source",
    # an ASCII letter and an accented Latin-1 letter, alternating: 18% under cl100k at the
    # 99th percentile, 19% at worst (pairs of letters are read only where words mix Latin
    # with Cyrillic or Greek, or hold many marks: reading them everywhere costs European text)
    "Latin-1 letters between ASCII letters",
}


@pytest.fixture(scope="module")
def exact() -> dict[str, Callable[[str], int]]:
    return {e: get_counter(f"tiktoken:{e}").count for e in ENCODINGS}


def _held(text: str, exact: dict[str, Callable[[str], int]]) -> None:
    estimate = estimate_tokens(text)
    for name, count in exact.items():
        truth = count(text)
        assert estimate * MARGIN >= truth, (name, estimate, truth, text[:60])


@pytest.mark.parametrize("text", ["a¿" * 300, "a¡" * 300, "a§" * 300, "a\u00ad" * 300])
def test_the_issues_letter_and_mark_cases_count_their_tokens(
    text: str, exact: dict[str, Callable[[str], int]]
) -> None:
    """`"a¿" * 300` was 301 where both encodings make 600: each `¿` a token, each `a` one."""
    assert estimate_tokens(text) >= 600 / MARGIN
    _held(text, exact)


@pytest.mark.parametrize(
    "text",
    [
        # zero-width characters inside words (were about 30% under)
        " ".join(f"qz{z}vkwj rt{z}plmx b{z}zqvd" for z in "\u200b\u200c\u200d\u2060\ufeff" * 20),
        # one non-ASCII character glued to a run of letters (`word…`, `word’s`, `naïve`)
        " ".join(["kqzjvx…", "trwplm’s", "bzqvïd", "snippet…", "qwxzt«"] * 60),
        # tokens hold `\ufeffusing` and `\ufeffnamespace` (were 38% under), and the soft
        # hyphen before `i` as a token of its own (was 29% under): neither joins these runs
        "u\ufeff" * 300,
        "n\ufeff" * 300,
        "ix\u00ad" * 200,
    ],
    ids=[
        "zero-width-inside-words",
        "one-character-glued",
        "u-and-a-byte-order-mark",
        "n-and-a-byte-order-mark",
        "letters-and-a-soft-hyphen",
    ],
)
def test_the_issues_glued_cases_hold_the_margin(
    text: str, exact: dict[str, Callable[[str], int]]
) -> None:
    _held(text, exact)


@pytest.mark.parametrize(
    "kind", sorted(set(fuzz.CRAFTED) - NOT_HELD), ids=lambda k: k.replace(" ", "-")
)
def test_crafted_text_is_never_more_than_the_margin_under(
    kind: str, exact: dict[str, Callable[[str], int]]
) -> None:
    """Zero-width characters inside words and between letters, one character glued to words,
    random letters or base64, marks and selectors on letters: within the server's margin of
    both encodings, on texts of 200-800 characters from the fuzzer's fixed seed."""
    rng = random.Random(kind)
    for _ in range(6):
        _held(fuzz.CRAFTED[kind](rng, rng.choice((200, 400, 800))), exact)


def test_glued_pairs_are_read_from_the_tokens() -> None:
    """The shipped pairs (`EstimateData.glued`): a letter and a non-ASCII character, some
    token holding them side by side. No token holds `¿a` or `a\\u200b`; o200k holds the soft
    hyphen before `a`, cl100k does not."""
    data = load()
    pairs = {name: glued_set(data.glued[name]) for name in ENCODINGS}
    for held in pairs.values():
        assert held and not {"¿a", "a¿", "a\u200b", "\u200ba", "§a"} & held
        assert all(len(p) == 2 and any(c.isascii() and c.isalpha() for c in p) for p in held)
        assert all(not p.isascii() for p in held)
    assert "\u00ada" in pairs["o200k_base"] and "\u00ada" not in pairs["cl100k_base"]


def test_glued_parts_reads_runs_and_the_runs_a_token_may_cover() -> None:
    """`a¿a¿` is 2 runs of letters and one of the rest between letters (the last `¿` may join
    what follows the word), none of which a token from before it covers; in `document’s`
    a token holds `’s` (a run of one letter after the apostrophe)."""
    held = _glued()
    assert glued_parts("a¿a¿".encode(), held) == ([b"a", b"a"], ["¿"], [0, 0])
    runs, wide, absorbed = glued_parts("document’s".encode(), held)
    assert (runs, wide) == ([b"document", b"s"], ["’"])
    assert absorbed == [1, 1]


def test_a_pair_held_by_a_token_does_not_join_runs_it_cannot_cover() -> None:
    """Both encodings hold `\u00adi` as a token, yet `ix\u00adix` is `ix`, `\u00ad`, `ix`:
    no token holds `\u00adix`, so the run `ix` begins a token; tokens hold `\ufeffusing`,
    none `\ufeffu` alone nor `\ufeffu\ufeff`."""
    held = _glued()
    assert all("\u00adi" in g.whole and "\u00adi" in g.pairs for g in held)
    assert glued_parts("ix\u00adix\u00adix".encode(), held)[2] == [0, 0]
    assert all("\ufeffu" in g.pairs and "\ufeffu" not in g.whole for g in held)
    assert glued_parts("u\ufeffu\ufeffu".encode(), held)[2] == [0, 0]


def _glued() -> tuple[Glued, ...]:
    data = load()
    return tuple(Glued.read(data.glued[name], data.glued_context[name]) for name in ENCODINGS)


def test_letters_cut_off_by_a_mark_cost_their_spelling(
    exact: dict[str, Callable[[str], int]],
) -> None:
    """`Tm£Tm£...`: no token holds `£T`, so each `Tm` begins a token, and cl100k's tokens that
    begin with `Tm` all hold a space before it: 3 tokens a repeat there (was 34% under)."""
    assert exact["cl100k_base"]("Tm£" * 200) == 600
    _held("Tm£" * 200, exact)
    _held("xQ¿" * 200, exact)


def test_pairs_of_characters_no_token_holds_are_cuts(
    exact: dict[str, Callable[[str], int]],
) -> None:
    """No token of cl100k holds `††`, `шь` nor `ьD`: `†††` is 3 tokens and `шьD` 3. Words
    mixing Latin, Cyrillic, Greek and Han were 17% under cl100k before pairs were read."""
    vocab = vocabulary("cl100k_base")
    assert pair_cuts(["†††".encode()], vocab, word_tokens) == 3 == exact["cl100k_base"]("†††")
    assert pair_cuts(["шьD".encode()], vocab, word_tokens) == 3 == exact["cl100k_base"]("шьD")
    _held("шьDiSgp乷 еиβς丳κπ тсщсuxq仞 " * 20, exact)


def test_a_word_after_a_unicode_space_costs_its_count_without_a_space(
    exact: dict[str, Callable[[str], int]],
) -> None:
    """`\u2009possibilities` is `\u2009` (2 tokens) and `poss`, `ibilities` in cl100k:
    the word has no space before it in its piece. Words after no-break, narrow and thin
    spaces were 14% under cl100k."""
    words = ["possibilities", "proceeds", "skewed", "the", "additionally", "and", "accessor"]
    text = " ".join(
        space + word for space, word in zip("\u2009\u202f\u00a0" * 70, words * 30, strict=True)
    )
    _held(text, exact)
