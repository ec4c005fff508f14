"""The estimate on text it does not recognise: never far under either encoding (issue 15).

Three sources of such text:
- families generated here, deterministically (DNA and protein sequences, hex digests, UUIDs,
  base64, API keys, random identifiers and letters, symbol soup, Cherokee and Shavian letters);
- the families of the shipped sample that nothing was fitted on (real files found on the build
  machine: markup, SQL, config, tables, e-mail, certificates, minified code and search indexes,
  paths and URLs, escaped JSON, rare scripts; and generated ones; see
  `tools/estimator/families.py`);
- hypothesis, over arbitrary strings.
The bound: on a chunk of 200 characters or more, the default `estimate` is never more than 25%
under cl100k_base nor o200k_base, and `estimate:<encoding>` never more than 25% under its
encoding; in a family, few chunks are more than 10% under. Chunking with the default counter
keeps chunks within their limit by the real tokenizers, within the same 25%.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import math
import random
import string
import sysconfig
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from ragbudget import chunk_text, get_counter
from ragbudget.estimate._floor import (
    bare_tokens,
    case_changes,
    floor_parts,
    floor_tokens,
    forced_tokens,
    foreign_tokens,
    isolated_tokens,
    other_tokens,
    word_tokens,
)
from ragbudget.estimate._model import DEFAULT_TARGET, TARGETS, estimate_tokens, vocabulary
from ragbudget.estimate._pieces import soup_tokens, space_pieces
from ragbudget.estimate._text import FOREIGN_COSTS, Vocabulary

SAMPLE = Path(__file__).parent / "data" / "estimator_sample.json.gz"
UNFITTED = (
    "markup",
    "sql",
    "config",
    "tables",
    "email",
    "certificates",
    "minified",
    "paths_urls",
    "json_escaped",
    "rare_scripts",
    "sequences",
    "digests",
    "base64",
    "identifiers",
    "symbols",
)
WORST = 0.25
LIMIT = 0.10


def _letters(alphabet: str) -> Callable[[random.Random, int], str]:
    def make(rng: random.Random, size: int) -> str:
        body = "".join(rng.choice(alphabet) for _ in range(size))
        return "\n".join(body[i : i + 60] for i in range(0, size, 60))

    return make


def _lines(one: Callable[[random.Random], str]) -> Callable[[random.Random, int], str]:
    def make(rng: random.Random, size: int) -> str:
        out: list[str] = []
        while sum(map(len, out)) < size:
            out.append(one(rng))
        return "\n".join(out)

    return make


def _key(rng: random.Random) -> str:
    return "sk-" + "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(40))


def _ident(rng: random.Random) -> str:
    words = ("".join(rng.choices(string.ascii_lowercase, k=rng.randint(2, 9))) for _ in "abc")
    return "_".join(words)


def _syllables(rng: random.Random, size: int) -> str:
    """Sentences of words in a made-up language with Dutch-like clusters (`sjtaaf`,
    `schoe`): words that look like words, none of which the vocabulary knows."""
    out: list[str] = []
    while sum(map(len, out)) < size:
        words = (
            "".join(
                rng.choice(("sj", "tj", "gr", "kl", "st", "zw", "sch", "dr", "br"))
                + rng.choice(("aa", "ee", "oe", "ui", "ie", "ei", "ou"))
                + rng.choice(("", "", "n", "r", "s", "t", "k", "ng", "l"))
                for _ in range(rng.randint(1, 4))
            )
            for _ in range(10)
        )
        sentence = " ".join(words)
        out.append(sentence[0].upper() + sentence[1:] + ".")
    return "\n".join(out)


_WORDS = [
    "the",
    "of",
    "and",
    "to",
    "in",
    "is",
    "for",
    "that",
    "with",
    "parse",
    "buffer",
    "value",
    "index",
    "header",
    "stream",
]


def _wide_gaps(rng: random.Random, size: int) -> str:
    """Words apart by runs of spaces longer than any token holds (padded or justified text)."""
    out: list[str] = []
    while sum(map(len, out)) < size:
        gap = " " * rng.choice((1, 2, 40, 90, 130, 200, 400))
        out.append(rng.choice(_WORDS) + gap + rng.choice(("", "\n")))
    return "".join(out)


def _random_case(rng: random.Random, size: int) -> str:
    """Words whose letters are capitals or not at random (`rEsOurCe`)."""
    out: list[str] = []
    while sum(map(len, out)) < size:
        word = "".join(rng.choice(_WORDS) for _ in range(rng.randint(1, 3)))
        out.append("".join(c.upper() if rng.random() < 0.5 else c for c in word))
    return " ".join(out)


CONTROLS = (*range(9), *range(14, 32), 127)

GENERATED: dict[str, Callable[[random.Random, int], str]] = {
    "dna": _letters("ACGT"),
    "dna_lowercase": _letters("acgt"),
    "protein": _letters("ACDEFGHIKLMNPQRSTVWY"),
    "random_letters": lambda rng, n: "".join(rng.choices(string.ascii_lowercase, k=n)),
    "random_words": lambda rng, n: " ".join(
        "".join(rng.choices(string.ascii_lowercase, k=rng.randint(2, 12))) for _ in range(n // 8)
    ),
    "base64": lambda rng, n: base64.encodebytes(rng.randbytes(n * 3 // 4)).decode(),
    "hex_sha256": _lines(lambda rng: hashlib.sha256(rng.randbytes(8)).hexdigest()),
    "uuids": _lines(lambda rng: str(uuid.UUID(int=rng.getrandbits(128), version=4))),
    "api_keys": _lines(_key),
    "identifiers": _lines(_ident),
    "symbol_soup": lambda rng, n: "".join(rng.choices(string.punctuation + " ", k=n)),
    "printable": lambda rng, n: "".join(rng.choices(string.printable, k=n)),
    "cherokee": lambda rng, n: "".join(
        rng.choice([*map(chr, range(0x13A0, 0x13F5)), " "]) for _ in range(n)
    ),
    "shavian": lambda rng, n: "".join(
        rng.choice([*map(chr, range(0x10450, 0x10480)), " ", " "]) for _ in range(n)
    ),
    "wide_gaps": _wide_gaps,
    "control_characters": lambda rng, n: "".join(
        chr(rng.choice(CONTROLS)) * rng.choice((1, 1, 2, 5, 30)) for _ in range(n // 4)
    ),
    "binary_as_latin1": lambda rng, n: rng.randbytes(n).decode("latin-1"),
    "random_case": _random_case,
    "base32": lambda rng, n: base64.b32encode(rng.randbytes(n * 5 // 8)).decode(),
    "random_capitals": lambda rng, n: " ".join(
        "".join(rng.choices(string.ascii_uppercase, k=rng.randint(2, 14))) for _ in range(n // 8)
    ),
}


@pytest.fixture(scope="module")
def exact() -> dict[str, Callable[[str], int]]:
    return {e: get_counter(f"tiktoken:{e}").count for e in TARGETS}


def _under(estimate: int, truth: int) -> float:
    return max(0.0, 1 - estimate / truth) if truth else 0.0


def _check_family(texts: list[str], exact: dict[str, Callable[[str], int]]) -> None:
    """The bounds for the default and for each calibrated target: no chunk of 200 characters
    or more over 25% under, and at most one in 24 over 10% under (the p99 bound, allowing for
    a small sample)."""
    truths = {e: [count(t) for t in texts] for e, count in exact.items()}
    default = [estimate_tokens(t) for t in texts]
    for encoding in TARGETS:
        own = [estimate_tokens(t, encoding) for t in texts]
        for estimates in (default, own):
            under = [
                _under(e, y)
                for e, y, t in zip(estimates, truths[encoding], texts, strict=True)
                if len(t) >= 200
            ]
            assert max(under) <= WORST, (encoding, sorted(under)[-3:])
            assert sum(u > LIMIT for u in under) <= max(1, len(under) // 24), sorted(under)[-3:]


@pytest.mark.parametrize("family", GENERATED)
def test_generated_family_is_never_far_under(
    family: str, exact: dict[str, Callable[[str], int]]
) -> None:
    rng = random.Random(family)
    texts = [GENERATED[family](rng, rng.randint(200, 3000))[:4000] for _ in range(24)]
    _check_family(texts, exact)


@pytest.fixture(scope="module")
def unfitted() -> dict[str, list[str]]:
    rows = json.loads(gzip.decompress(SAMPLE.read_bytes()))
    out: dict[str, list[str]] = {}
    for row in rows:
        if row["family"] in UNFITTED:
            out.setdefault(row["family"], []).append(row["text"])
    return out


def test_sample_holds_every_unfitted_family(unfitted: dict[str, list[str]]) -> None:
    assert set(unfitted) == set(UNFITTED)
    assert all(len(texts) >= 24 for texts in unfitted.values())


@pytest.mark.parametrize("family", UNFITTED)
def test_unfitted_sample_family_is_never_far_under(
    family: str, unfitted: dict[str, list[str]], exact: dict[str, Callable[[str], int]]
) -> None:
    _check_family(unfitted[family], exact)


ALPHABETS = st.sampled_from(
    (
        string.ascii_lowercase,
        string.ascii_letters + string.digits,
        string.hexdigits,
        string.punctuation,
        string.printable,
        "ACGT",
        "".join(map(chr, range(0x13A0, 0x13F5))),
    )
)
ANY_LONG = st.one_of(
    st.text(alphabet=st.characters(codec="utf-8"), min_size=200, max_size=800),
    ALPHABETS.flatmap(lambda a: st.text(alphabet=a, min_size=200, max_size=800)),
)


@settings(max_examples=150, deadline=None)
@given(text=ANY_LONG)
@example(text="ACGT" * 60)
@example(text="\U00010450\U00010451 " * 80)
@example(text="!@#$%^&*()_+{}|:<>?~" * 12)
def test_never_far_under_on_any_long_string(
    text: str, exact: dict[str, Callable[[str], int]]
) -> None:
    default = estimate_tokens(text)
    assert default >= 1
    for encoding, count in exact.items():
        truth = count(text)
        assert _under(default, truth) <= WORST, (encoding, default, truth)
        assert _under(estimate_tokens(text, encoding), truth) <= WORST, encoding


@pytest.mark.parametrize("family", ["dna", "base64", "api_keys", "symbol_soup", "cherokee"])
def test_chunks_stay_within_their_limit_by_real_tokenizers(
    family: str, exact: dict[str, Callable[[str], int]]
) -> None:
    """`chunk_text` with the default counter: every chunk counts at most `max_tokens` by the
    estimate, hence at most 25% more by either tokenizer."""
    rng = random.Random(family)
    text = GENERATED[family](rng, 12_000)
    chunks = chunk_text(text, max_tokens=256)
    assert len(chunks) > 3
    for chunk in chunks:
        assert chunk.tokens <= 256
        assert estimate_tokens(chunk.text, DEFAULT_TARGET) <= 256
        for count in exact.values():
            assert count(chunk.text) <= 256 / (1 - WORST)


# The floor's rule for text in a language the vocabulary lacks: where unknown words are half of
# a text's words or more, they cost at least FOREIGN_COSTS tokens per character, unless they
# look like code's identifiers. Without it Limburgish and Kabyle catalogues were up to 27% under.


def _parts(text: str, target: str) -> tuple[list[bytes], list[bytes], int]:
    _, _, _, unknown, other, words = floor_parts(text, vocabulary(target))
    return unknown, other, words


def test_each_target_takes_the_largest_cost_it_covers() -> None:
    assert vocabulary(DEFAULT_TARGET).foreign == max(FOREIGN_COSTS.values())
    for target in TARGETS:
        assert vocabulary(target).foreign == FOREIGN_COSTS[target]


def test_unknown_words_cost_their_characters_from_half_the_words() -> None:
    vocab = vocabulary(DEFAULT_TARGET)
    half = "the sjtaaftiep of zwoeigraak"  # 2 unknown words of 4
    unknown, other, words = _parts(half, DEFAULT_TARGET)
    assert (len(unknown), len(other), words) == (2, 0, 4)
    assert foreign_tokens(unknown, other, words, vocab) == math.ceil(vocab.foreign * 20)
    fewer = "the sjtaaftiep of the house"  # 1 of 5
    assert foreign_tokens(*_parts(fewer, DEFAULT_TARGET), vocab) == 0
    assert foreign_tokens(*_parts("the house of the king", DEFAULT_TARGET), vocab) == 0


def test_non_ascii_unknown_words_count_their_characters_not_bytes() -> None:
    vocab = vocabulary("cl100k_base")
    unknown, other, words = _parts("sjtaaf ẓḥuṭaɣ", "cl100k_base")
    assert (len(unknown), len(other), words) == (1, 1, 2)
    assert foreign_tokens(unknown, other, words, vocab) == math.ceil(vocab.foreign * 12)


def test_a_script_whose_unknown_words_cost_more_costs_its_own_rate() -> None:
    """Where a script's unknown words cost more per character than the European ones in the
    fitted chunks (`EstimateData.script_costs`: Gurmukhi, about 0.73 tokens a character in
    o200k and 2 in cl100k, which spells it byte by byte), its characters cost that rate; the
    default takes the larger of the encodings'."""
    text = "ਪੰਜਾਬੀ ਭਾਸ਼ਾ ਵਿੱਚ ਲਿਖਿਆ ਗਿਆ ਅਤੇ ਇਹ ਕਰਦਾ"
    rates = {}
    for target in (*TARGETS, DEFAULT_TARGET):
        vocab = vocabulary(target)
        unknown, other, words = _parts(text, target)
        chars = sum(len(w.decode()) for w in other)
        gurmukhi = sum(w.count("ਕ".encode()[:2]) for w in other)
        rates[target] = vocab.foreign + dict(vocab.scripts)[b"\xe0\xa8"]
        assert rates[target] > vocab.foreign, target
        assert foreign_tokens(unknown, other, words, vocab) >= math.ceil(
            vocab.foreign * (chars - gurmukhi) + rates[target] * gurmukhi
        )
    assert rates[DEFAULT_TARGET] == pytest.approx(max(rates[t] for t in TARGETS))


def test_code_identifiers_are_left_to_the_other_rules() -> None:
    vocab = vocabulary(DEFAULT_TARGET)
    code = "parseHttpHeader readJsonBody writeCsvRow"
    assert foreign_tokens(*_parts(code, DEFAULT_TARGET), vocab) == 0


def test_the_rule_keeps_a_language_the_vocabulary_lacks_near_the_truth(
    exact: dict[str, Callable[[str], int]],
) -> None:
    """On made-up Dutch-like words the linear model is about 30% under cl100k, and the words'
    other floor rules give less than this one, which holds the default and cl100k within 10%.
    (`estimate:o200k_base` stays 4-13% under on them: o200k spends 0.36-0.39 tokens per
    character on these words, more than on most of the corpus's European languages; a known
    miss, docs/estimator.md.)"""
    rng = random.Random("foreign")
    for _ in range(5):
        text = _syllables(rng, 600)
        for target in (DEFAULT_TARGET, *TARGETS):
            vocab = vocabulary(target)
            unknown, other, words = _parts(text, target)
            rule = foreign_tokens(unknown, other, words, vocab)
            assert rule > word_tokens(unknown, vocab) + other_tokens(other, vocab), target
            assert estimate_tokens(text, target) >= rule
            if target == "o200k_base":
                continue
            covered = TARGETS if target == DEFAULT_TARGET else (target,)
            truth = max(exact[e](text) for e in covered)
            assert estimate_tokens(text, target) >= 0.9 * truth, (target, truth)


def test_macros_in_capitals_are_not_priced_as_random_letters(
    exact: dict[str, Callable[[str], int]],
) -> None:
    """C with macros in capitals (`METH_KEYWORDS`, `NPY_API_VERSION`): taken together with the
    other unknown words, their few vowels once made the floor price them all as random
    letters, a third above the tokenizers. Words in capitals are left out of that test."""
    text = "\n".join(
        (
            "#define MMH_DIGESTSIZE 16",
            "#define NPY_NO_DEPRECATED_API NPY_API_VERSION",
            "static PyMethodDef methods[] = {",
            '    {"hash", (PyCFunction)hash, METH_FASTCALL | METH_KEYWORDS, NULL},',
            '    {"digest", (PyCFunction)digest, METH_VARARGS | METH_KEYWORDS, NULL},',
            "    {NULL, NULL, 0, NULL}",
            "};",
            "#if defined(PY_SSIZE_T_CLEAN) && !defined(NDEBUG)",
            "#endif",
        )
    )
    for target in TARGETS:
        assert floor_tokens(text, vocabulary(target)) <= exact[target](text), target
    # the default's floor is the larger of the encodings' (o200k cuts `METH` in 2, cl100k not)
    assert floor_tokens(text, vocabulary(DEFAULT_TARGET)) <= max(c(text) for c in exact.values())


@pytest.mark.parametrize(
    "text",
    [
        # glibc's locale sources: an indentation piece, ` "`, the word, `";`, `/\n`
        '         "Apr";/\n         "May";/\n         "June"\n',
        '{\n  "name": "value",\n  "size": 12,\n  "list": [1, 2]\n}\n',
        '{\\n  \\"name\\": \\"value\\"\\n}',  # JSON escaped in a JSON string
    ],
    ids=["locale", "json", "escaped-json"],
)
def test_the_floor_counts_the_pieces_whitespace_and_quotes_make(
    text: str, exact: dict[str, Callable[[str], int]]
) -> None:
    """The pre-splitting keeps apart a run of 2 or more spaces before a word (all but its last
    space), a space before a digit, and a quote between a space and a word (` "`, then `Apr`);
    a line break after a symbol joins it (`";/\\n`), and `\\"` or `</` are structure, not
    symbol soup. On these texts of known words the floor is then the tokenizers' count; it was
    3 a line of 5 on the first."""
    for target in TARGETS:
        assert floor_tokens(text, vocabulary(target)) == exact[target](text), target


def test_a_run_of_symbols_no_token_holds_is_two_tokens(
    exact: dict[str, Callable[[str], int]],
) -> None:
    """Git's usage lines: the pre-splitting makes a piece of each run of symbols (` [<`, `>]`,
    `|--`), and o200k holds few of them in one token. The floor counted a token a run, 34 and
    35 where o200k makes 41 (the default estimate 15% under); a run that no token of the
    encoding holds whole now costs 2, which takes the floor to within a token of the truth,
    never above it."""
    text = (
        "git stash apply [--index] [-q|--quiet] [<stash>]\n"
        "git notes merge --abort [<options>]\n"
        "git describe [<options>] [<commit-ish>...]\n"
    )
    for target in TARGETS:
        assert (
            exact[target](text) - 1 <= floor_tokens(text, vocabulary(target)) <= exact[target](text)
        )
    larger = max(count(text) for count in exact.values())
    assert larger - 1 <= floor_tokens(text, vocabulary(DEFAULT_TARGET)) <= larger


def test_names_with_few_vowels_but_no_rare_pairs_are_words(
    exact: dict[str, Callable[[str], int]],
) -> None:
    """A shell script's names (`bashrc`, `pexpect`, `systemwide`) have fewer than 25% vowels
    taken together, but hardly a rare letter pair: priced as random letters they put the
    floor 27% above the tokenizers (109 against 86). Few vowels count only with a rare pair in
    one position of 10."""
    text = (
        "# Different platforms have different names for the systemwide bashrc\n"
        "if [[ -f /etc/bashrc ]]; then\n  source /etc/bashrc\nfi\n"
        "if [[ -f /etc/bash.bashrc ]]; then\n  source /etc/bash.bashrc\nfi\n"
        "if [[ -f ~/.bashrc ]]; then\n  source ~/.bashrc\nfi\n\n"
        "# Reset PS1 so pexpect can find it\n"
    )
    least = min(count(text) for count in exact.values())
    for target in (DEFAULT_TARGET, *TARGETS):
        assert floor_tokens(text, vocabulary(target)) <= least, target


def test_a_rule_line_in_symbol_soup_costs_its_long_tokens(
    exact: dict[str, Callable[[str], int]],
) -> None:
    """LLVM's file banners (`//===---...---===//`) hold 3 different symbols, so the floor
    priced them as symbol soup, 0.66 tokens a symbol: 115 tokens for this text, which both
    encodings make 15-17 of (the 70 dashes are one token), and LLVM's headers were
    over-counted 3-4x wherever a banner was most of a chunk. A repeat of 4 or more of one
    symbol in a run now costs the pieces of the longest repeats the encodings hold (25 here:
    `//` and `===` are still priced as soup); real soup is priced as before."""
    banner = "//===" + "-" * 70 + "===//\n"
    text = banner + "//\n// Part of the LLVM Project.\n//\n" + banner
    least = min(count(text) for count in exact.values())
    for target in (DEFAULT_TARGET, *TARGETS):
        assert floor_tokens(text, vocabulary(target)) <= 2 * least, target
    soup = "!@#$%^&*()" * 3
    assert soup_tokens(soup.encode(), vocabulary(DEFAULT_TARGET).symbol_runs) == 20
    assert soup_tokens(b"$$$$%%%%^^^^", vocabulary(DEFAULT_TARGET).symbol_runs) == 3


# Found by a fuzzer over generated text (docs/estimator.md): runs of spaces longer than any
# token holds (41% under o200k on 3,000 spaces), control characters (35% under: each is a
# token) and words in random case (36% under) were counted as if they were short.


@pytest.mark.parametrize("size", [2, 60, 79, 80, 81, 82, 95, 100, 128, 129, 200, 300, 599, 3000])
def test_a_run_of_spaces_costs_the_runs_the_encodings_hold(
    size: int, exact: dict[str, Callable[[str], int]]
) -> None:
    """At the end of the text, before a word and before a line break: the floor never counts
    more than the tokenizers, and the estimate is never more than 10% under."""
    run = " " * size
    for text in (run, "a" + run + "b", ("x" + run) * 5 + "\n", "a" + run + "\nb", run + "1"):
        truths = {e: count(text) for e, count in exact.items()}
        for target in (DEFAULT_TARGET, *TARGETS):
            truth = max(truths.values()) if target == DEFAULT_TARGET else truths[target]
            assert floor_tokens(text, vocabulary(target)) <= truth, (target, repr(text[:9]))
            if len(text) >= 80:
                assert _under(estimate_tokens(text, target), truth) <= LIMIT, (target, size)


def test_trailing_spaces_and_words_at_a_line_start_cost_their_count(
    exact: dict[str, Callable[[str], int]],
) -> None:
    """A run of 29 spaces or more before a line break is 2 tokens or more (byte-pair merges
    cut `171 spaces\n` into 128, 43 and the line break, though tokens hold 48 spaces and a line
    break), and a word at a line's start costs its count without a space (`previously`: 2).
    Lines of one known word and trailing spaces were 16-18% under at the 99th percentile; the
    floor now counts each encoding's own tokens of them, exactly."""
    rng = random.Random("trailing")
    vocab = vocabulary(DEFAULT_TARGET)
    known = sorted(w.decode() for w in vocab.words if w.isascii() and w.isalpha())
    for _ in range(20):
        lines = [rng.choice(known) + " " * rng.randint(29, 256) for _ in range(rng.randint(1, 9))]
        text = "\n".join(lines)
        for target in TARGETS:
            assert floor_tokens(text, vocabulary(target)) == exact[target](text), target
        truth = max(count(text) for count in exact.values())
        assert _under(estimate_tokens(text), truth) <= LIMIT
    assert bare_tokens(b"previously\nworked", vocabulary("cl100k_base")) == 1


_KNOWN = sorted(w.decode() for w in vocabulary(DEFAULT_TARGET).words if w.isascii() and w.isalpha())


@settings(max_examples=150, deadline=None)
@given(
    lines=st.lists(
        st.tuples(
            st.sampled_from(_KNOWN), st.integers(1, 300), st.sampled_from(("", "\n", "\r"))
        ).map(lambda part: part[0] + " " * part[1] + part[2]),
        min_size=1,
        max_size=12,
    ),
    indent=st.booleans(),
)
def test_known_words_and_runs_of_spaces_are_never_counted_over_the_encodings(
    lines: list[str], indent: bool, exact: dict[str, Callable[[str], int]]
) -> None:
    """Known words after a space, at a line's start or at the text's start, and runs of 1-300
    spaces alone, before a word or before a line break: the floor's pieces (the solid floor
    and the foreign rule aside) never count more than each encoding makes of them."""
    text = (" " if indent else "") + "".join(lines)
    for target in TARGETS:
        vocab = vocabulary(target)
        data, _, known, unknown, other, words = floor_parts(text, vocab)
        assert not unknown and not other
        assert forced_tokens(data, known, unknown, other, vocab, words) <= exact[target](text)


def test_a_letter_beside_a_byte_no_token_holds_beside_one_is_a_cut(
    exact: dict[str, Callable[[str], int]],
) -> None:
    """No token of cl100k holds an ASCII letter right before a byte that starts a zero-width
    space, a curly apostrophe or a Cyrillic letter, and neither encoding some of the bytes
    that end such characters right before a letter: one token ends there and the next
    begins. Letters between zero-width spaces were 12% under at the 99th percentile, each
    word priced a token; `don’t` is `don` and `’t`."""
    source = Path(sysconfig.get_paths()["stdlib"], "textwrap.py").read_text(encoding="utf-8")
    rng = random.Random("zero-width")
    for _ in range(20):
        start = rng.randrange(len(source) - 1000)
        text = "\u200b".join(source[start : start + rng.choice((200, 500, 1000))])
        truths = {e: count(text) for e, count in exact.items()}
        for target in (DEFAULT_TARGET, *TARGETS):
            truth = max(truths.values()) if target == DEFAULT_TARGET else truths[target]
            assert _under(estimate_tokens(text, target), truth) <= LIMIT, target
    vocab = vocabulary("cl100k_base")
    assert other_tokens(["don’t".encode(), "isn’t".encode()], vocab) == 4
    quoted = "“Don’t” — it’s the user’s “choice”, isn’t it? " * 8
    assert floor_tokens(quoted, vocab) <= exact["cl100k_base"](quoted)
    bare = Vocabulary.build([], [], "é")  # no cuts known: the other prices alone
    assert other_tokens(["don’t".encode(), "café".encode()], bare) >= 2


def test_latin_words_with_cyrillic_look_alikes_cost_their_cuts(
    exact: dict[str, Callable[[str], int]],
) -> None:
    """Source code with Cyrillic letters that look Latin put in half its words (`sеlf`, a
    homoglyph attack) was 14% under cl100k at the 99th percentile: between two adjacent bytes
    that no token holds side by side, one token ends and the next begins, and such words hold
    many. Counted, the floor stays under each encoding's count."""
    source = Path(sysconfig.get_paths()["stdlib"], "textwrap.py").read_text(encoding="utf-8")
    look_alike = str.maketrans("aeopcxy", "аеорсху")
    rng = random.Random("homoglyphs")
    for _ in range(10):
        start = rng.randrange(len(source) - 1000)
        text = " ".join(
            word.translate(look_alike) if rng.random() < 0.5 else word
            for word in source[start : start + 1000].split(" ")
        )
        for target in TARGETS:
            vocab = vocabulary(target)
            assert floor_tokens(text, vocab) <= exact[target](text), target
    vocab = vocabulary("cl100k_base")
    word = "sеlf".encode()  # s, е (Cyrillic), l, f: s|е and е|l are pairs no token holds
    assert other_tokens([word], vocab) == 3


def test_space_pieces_are_the_fewest_runs_held() -> None:
    """`space_pieces` past its table (3 times the longest run) equals the fewest runs of the
    held lengths that make the run, found by dynamic programming over every length."""
    for lengths in vocabulary(DEFAULT_TARGET).space_runs:
        best = [0]
        for size in range(1, 1500):
            best.append(1 + min(best[size - n] for n in lengths if n <= size))
        assert [space_pieces((lengths,), n) for n in range(1500)] == best


def test_control_characters_are_a_token_each(exact: dict[str, Callable[[str], int]]) -> None:
    """No token holds a control character beside another character but cl100k's `\\x1b[` and
    o200k's `\\x00\\x00` (and `\\x01E`): the floor counts them one by one, less those."""
    rng = random.Random("controls")
    nulls = "\x00" * 500
    mixed = "".join(chr(rng.choice(CONTROLS)) for _ in range(600))
    ansi = "\x1b[31mERROR\x1b[0m: no such file\n" * 20
    for text in (nulls, mixed, ansi, "word\x04%u " * 50):
        truths = {e: count(text) for e, count in exact.items()}
        for target in (DEFAULT_TARGET, *TARGETS):
            truth = max(truths.values()) if target == DEFAULT_TARGET else truths[target]
            assert floor_tokens(text, vocabulary(target)) <= truth, (target, repr(text[:9]))
    assert floor_tokens(nulls, vocabulary("o200k_base")) == exact["o200k_base"](nulls) == 250
    assert floor_tokens(nulls, vocabulary("cl100k_base")) == exact["cl100k_base"](nulls) == 500
    assert floor_tokens(mixed, vocabulary(DEFAULT_TARGET)) >= 0.95 * exact["cl100k_base"](mixed)


def test_a_space_before_a_control_character_is_a_token(
    exact: dict[str, Callable[[str], int]],
) -> None:
    """No token holds a space before a control character, so the space is a token of its own
    (`x \x01` is `x`, ` `, `\x01`): source code with stray bytes put in was 16-17% under at
    the 99th percentile before the floor counted it."""
    spaced = " \x1c \x1a \x11 \x06 \x1f" * 40
    for target in (DEFAULT_TARGET, *TARGETS):
        truth = max(count(spaced) for count in exact.values())
        if target != DEFAULT_TARGET:
            truth = exact[target](spaced)
        assert floor_tokens(spaced, vocabulary(target)) == truth == 400, target
    code = "def popitem(self):\n    if self.\x1epending \x06 removals:\n \x0f  return \x01\n" * 9
    for target in (DEFAULT_TARGET, *TARGETS):
        least = min(count(code) for count in exact.values())
        assert floor_tokens(code, vocabulary(target)) <= least, target
        assert estimate_tokens(code, target) >= 0.9 * least, target


def test_words_in_random_case_cost_what_random_letters_do() -> None:
    """A lowercase letter alone between capitals often, and many capitals: random case, priced
    as random letters; camelCase and a few short names are not (`MyApp MyCompany`)."""
    vocab = vocabulary(DEFAULT_TARGET)
    short = [b"rEsOurCe", b"aNdCaN", b"tHaTiS", b"wItHoUt"]  # taken together
    pairs = sum(map(len, short)) - len(short)
    assert word_tokens(short, vocab) == len(short) + math.ceil(0.55 * pairs)
    for long in (b"aTtRIBUteerRoR", b"mErCHAnTABIlity"):  # 12 letters or more: one by one
        assert word_tokens([long], vocab) == 1 + math.ceil(0.55 * (len(long) - 1))
    # camelCase: a token per word and per case change (and rare letter pair)
    camel = [b"getIncrementalEncoder", b"MyApp", b"MyCompany", b"parseHttpHeader"]
    changes = sum(map(case_changes, camel))
    assert len(camel) + changes <= word_tokens(camel, vocab) <= len(camel) + changes + 3
    assert case_changes(b"HTTPServer") == 1 and case_changes(b"camelCase") == 1


def test_random_capitals_cost_more_than_random_lowercase_letters() -> None:
    """Random capitals cost 0.6-0.67 tokens a letter (cl100k; o200k 0.58-0.65), random
    lowercase letters 0.54: base32 was 15% under at the 99th percentile. Words in capitals
    that hold a rare letter pair in one position of 5 are priced at 0.6 a letter; macros and
    abbreviations (`METH_KEYWORDS`) are not (`test_macros_in_capitals_...`), nor are
    sequences of a few letters (DNA: 0.54)."""
    vocab = vocabulary(DEFAULT_TARGET)
    short = [b"QXJZ", b"VKWP", b"ZQ"]  # taken together
    pairs = sum(map(len, short)) - len(short)
    assert word_tokens(short, vocab) == len(short) + math.ceil(0.6 * pairs)
    long = b"QXJZVKWPBFYGH"  # 12 letters or more: one by one
    assert word_tokens([long], vocab) == 1 + math.ceil(0.6 * (len(long) - 1))
    dna = b"ACGTTGCAACGTAGCT"
    assert word_tokens([dna], vocab) == 1 + math.ceil(0.55 * (len(dna) - 1))
    assert word_tokens([b"METH", b"KEYWORDS", b"DIGESTSIZE"], vocab) <= 5


def test_a_character_no_merge_joins_to_ascii_cuts_the_text(
    exact: dict[str, Callable[[str], int]],
) -> None:
    """A variation selector (U+FE0F) between every two characters of source code hides
    nothing from the eye and made every character a token: the estimate was 26-29% under.
    No merge of either encoding joins it to ASCII, so the floor counts a token per run of such
    characters beside ASCII and per stretch between them: here, the exact count."""
    vocab = vocabulary(DEFAULT_TARGET)
    source = "def estimate_tokens(text, target):\n    return floor(text) + 12\n" * 4
    hidden = "\ufe0f".join(source)
    truths = {e: count(hidden) for e, count in exact.items()}
    assert truths["cl100k_base"] == truths["o200k_base"] == len(hidden)
    assert floor_tokens(hidden, vocab) == len(hidden)
    for target in (DEFAULT_TARGET, *TARGETS):
        assert estimate_tokens(hidden, target) == len(hidden)
    # beside other non-ASCII characters nothing is known: no bound from them
    assert isolated_tokens("é\ufe0fé\ufe0fé", vocab) == 0
    assert isolated_tokens("a\ufe0f\ufe0fb c", vocab) == 3  # a, the run, b c


@pytest.mark.parametrize("encoding", TARGETS)
def test_the_isolated_characters_are_a_token_beside_any_ascii(encoding: str) -> None:
    """The shipped characters that no merge joins to ASCII are the encoding's (read from its
    merges by `fit.isolated_chars`), and each is one token of its own between any two ASCII
    characters (two of them side by side may make one token: the floor counts a run as one)."""
    import sys

    import tiktoken
    from ragbudget import use_bundled_tiktoken_files
    from ragbudget.estimate._data import load

    sys.path.insert(0, str(Path(__file__).parents[2] / "tools" / "estimator"))
    import fit

    use_bundled_tiktoken_files()
    enc = tiktoken.get_encoding(encoding)
    shipped = load().isolated[encoding]
    assert shipped == fit.isolated_chars(enc)
    assert "\ufe0f" in shipped and len(shipped) > 200
    around = [chr(c) for c in range(0x20, 0x7F)] + ["\n", "\t"]
    for char in shipped:
        token = enc.encode_single_token(char.encode())
        for text in (f"ab{char}cd", *(f"{x}{char}{x}a{char}{x}" for x in around)):
            assert enc.encode_ordinary(text).count(token) == text.count(char), repr(text)
