"""The estimator's fit (`tools/estimator/fit.py`, issue 15): its safety scales per group of
weights, and the vocabulary its features are fitted with.

The held-out figures of docs/estimator.md depend on these: one scale for all the weights let
the family with the longest tail lift every other one, and a word known only through the
fitted chunk's own origin made the fitted chunks look unlike the held-out ones.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from ragbudget.estimate._model import FEATURE_NAMES, estimate_tokens

sys.path.insert(0, str(Path(__file__).parents[2] / "tools" / "estimator"))

import fit
from corpus import FAMILIES, Chunk

NAMES = list(FEATURE_NAMES)
RNG_SEED = 15


def _weights() -> np.ndarray:
    """Weights whose every character class costs more than 0, however the groups are scaled."""
    coef = np.zeros(len(NAMES))
    for name, value in {
        "bytes": 0.1,
        "chars": 0.1,
        "rare": 0.3,
        "c": 0.2,
        "other_unknown_bytes": 0.05,
        "unknown_bytes": 0.04,
        "constant": 1.0,
    }.items():
        coef[NAMES.index(name)] = value
    return coef


def _rows(rng: np.random.Generator, family: str, n: int) -> np.ndarray:
    """Feature rows of one family: ASCII text, or text with non-ASCII characters (Cyrillic)."""
    x = np.zeros((n, len(NAMES)))
    chars = rng.integers(100, 4000, n).astype(float)
    ascii_family = family in fit.ASCII_FAMILIES
    x[:, NAMES.index("chars")] = chars
    x[:, NAMES.index("bytes")] = chars if ascii_family else 1.8 * chars
    x[:, NAMES.index("unknown_bytes")] = 0.3 * chars
    if not ascii_family:
        x[:, NAMES.index("c")] = 0.8 * chars
        x[:, NAMES.index("rare")] = rng.uniform(0, 0.2, n) * chars
        x[:, NAMES.index("other_unknown_bytes")] = rng.uniform(0.2, 0.6, n) * chars
    x[:, NAMES.index("constant")] = 1.0
    return x


@given(
    ascii_scale=st.floats(0.5, 1.5),
    unknown=st.floats(0.5, 1.5),
    other=st.floats(0.5, 1.5),
)
@settings(max_examples=50, deadline=None)
def test_scaled_weights_scale_each_part_of_the_estimate(
    ascii_scale: float, unknown: float, other: float
) -> None:
    rng = np.random.default_rng(RNG_SEED)
    x = np.vstack([_rows(rng, "code", 20), _rows(rng, "cyrillic_greek", 20)])
    coef = _weights()
    parts = fit._parts(x, coef)
    expected = ascii_scale * parts[0] + unknown * parts[1] + other * parts[2]
    got = x @ fit.scaled(coef, ascii_scale, unknown, other)
    np.testing.assert_allclose(got, expected, rtol=1e-9)
    # the ASCII rows are scaled by the ASCII scale alone
    np.testing.assert_allclose(got[:20], ascii_scale * (x[:20] @ coef), rtol=1e-9)


def test_scaled_weights_never_let_a_character_class_lower_the_estimate() -> None:
    coef = _weights()
    coef[NAMES.index("c")] = -0.3  # Cyrillic at exactly 0 a character: 2 * 0.1 + 0.1 - 0.3
    weights = fit.scaled(coef, 1.0, 1.0, 1.5)
    assert min(fit.char_costs(weights).values()) >= 0


@pytest.mark.parametrize("margins", [(0.10, 0.08), (0.085, 0.085)])
def test_safety_scales_hold_every_family_at_its_margin(margins: tuple[float, float]) -> None:
    """On the rows they are chosen on, at most 1% of a family falls under by more than its
    margin: the ASCII families by the first, the others by the second."""
    rng = np.random.default_rng(RNG_SEED)
    coef = _weights()
    x = np.vstack([_rows(rng, family, 300) for family in FAMILIES])
    families = np.repeat(np.array(FAMILIES), 300)
    y = (x @ coef) * rng.lognormal(0.0, 0.05, len(families))
    fitted = np.ones(len(y), dtype=bool)
    scales = fit.safety_scales(x, y, coef, families, fitted, margins)
    ratio = (x @ fit.scaled(coef, *scales)) / y
    for family in FAMILIES:
        margin = margins[0] if family in fit.ASCII_FAMILIES else margins[1]
        assert np.quantile(ratio[families == family], 0.01) >= 1 - margin - 1e-9, family
    # and the ASCII scale is the least that holds the ASCII families: one of them is at it
    low = min(np.quantile(ratio[families == family], 0.01) for family in fit.ASCII_FAMILIES)
    assert low == pytest.approx(1 - margins[0])


def test_fit_features_know_a_word_only_through_other_origins() -> None:
    """A word found in MIN_ORIGINS origins is in the shipped vocabulary, but not in the one the
    weights are fitted with: there, each chunk of those origins would know it through its own."""
    texts = {
        "/usr/share/locale/de/LC_MESSAGES/a.mo": "alpha beta",
        "/usr/share/locale/de/LC_MESSAGES/b.mo": "alpha beta",
        "/usr/share/locale/de/LC_MESSAGES/c.mo": "alpha beta gamma",
        "/usr/share/locale/de/LC_MESSAGES/d.mo": "beta gamma",
    }
    chunks = [Chunk("european", source, "fit", text) for source, text in texts.items()]
    words = ["alpha", "beta", "gamma"]
    vocab = {"cl100k_base": ([1, 1, 1], "")}
    kept, kept_vocab = fit.strict_words(chunks, words, vocab)
    assert kept == ["beta"]  # alpha: 3 origins, gamma: 2; beta: 4
    assert kept_vocab == {"cl100k_base": ([1], "")}


def test_capitals_cost_more_than_lowercase() -> None:
    """o200k cuts Greek and Cyrillic words in capitals into more pieces (82 tokens against 50
    for this text in lowercase): the estimate counts the capitals."""
    text = (
        "Употреба: %s [ОПЦИЈА]... ИЗВОР... ДИРЕКТОРИЈУМ и копирај ИЗВОР у ОДРЕДИШТЕ, или више "
        "ИЗВОРА у ДИРЕКТОРИЈУМ. Ελληνικά ΚΕΦΑΛΑΙΑ ΓΡΑΜΜΑΤΑ"
    )
    for target in ("max", "cl100k_base", "o200k_base"):
        assert estimate_tokens(text, target) > estimate_tokens(text.lower(), target)


def test_weak_letters_are_read_from_the_encoding() -> None:
    """Letters o200k holds alone but in few longer tokens (Kazakh's Ұ, Yiddish's װ) are weak;
    Russian's common letters, which many o200k tokens hold, are not."""
    import tiktoken
    from ragbudget import use_bundled_tiktoken_files

    use_bundled_tiktoken_files()
    weak = set(fit.weak_letters(tiktoken.get_encoding("o200k_base")))
    assert {"Ұ", "Ғ", "װ"} <= weak
    assert not weak & set("аеиопрст")


@pytest.mark.parametrize("encoding", ["cl100k_base", "o200k_base"])
def test_the_shipped_symbol_runs_are_read_from_the_encoding(encoding: str) -> None:
    """The floor prices a run of symbols that no token holds whole at 2 tokens: the runs the
    data file holds must be the encoding's own (`--tables` rewrites them), 2 symbols or more
    each. o200k holds git's ` [<` in no token, cl100k does."""
    import tiktoken
    from ragbudget import use_bundled_tiktoken_files
    from ragbudget.estimate._data import load

    use_bundled_tiktoken_files()
    shipped = load().symbol_runs[encoding]
    assert shipped == fit.symbol_runs(tiktoken.get_encoding(encoding))
    runs = shipped.split(" ")
    assert all(len(run) >= 2 and not any(c.isalnum() or c.isspace() for c in run) for run in runs)
    assert ("[<" in runs) == (encoding == "cl100k_base")
    assert {"),", '":'} <= set(runs)


@pytest.mark.parametrize("encoding", ["cl100k_base", "o200k_base"])
def test_the_shipped_space_runs_are_read_from_the_encoding(encoding: str) -> None:
    """The floor prices a long run of spaces by the runs of spaces the encoding holds: the
    lengths the data file holds must be the encoding's own (`--tables` rewrites them)."""
    import tiktoken
    from ragbudget import use_bundled_tiktoken_files
    from ragbudget.estimate._data import load
    from ragbudget.estimate._model import vocabulary

    use_bundled_tiktoken_files()
    shipped = load().space_runs[encoding]
    assert shipped == fit.space_runs(tiktoken.get_encoding(encoding))
    lengths = tuple(map(int, shipped.split()))
    assert lengths[:79] == tuple(range(1, 80)) and lengths[-1] == 128
    assert lengths in vocabulary(encoding).space_runs


@pytest.mark.parametrize("encoding", ["cl100k_base", "o200k_base"])
def test_the_shipped_counts_of_spaces_and_bare_words_are_the_encodings(encoding: str) -> None:
    """The floor counts a run of spaces (alone, or before a line break), a word at a line's
    start and the bytes no token holds beside an ASCII letter by what the encoding makes of
    them: what the data file holds must be its own (`--tables` rewrites it)."""
    import tiktoken
    from ragbudget import use_bundled_tiktoken_files
    from ragbudget.estimate._data import load

    use_bundled_tiktoken_files()
    enc = tiktoken.get_encoding(encoding)
    data = load()
    assert data.space_counts[encoding] == fit.space_counts(enc)
    assert data.bare_tokens[encoding] == fit.bare_tokens(data.words, enc)
    assert data.letter_cuts[encoding] == fit.letter_cuts(enc)
    assert data.byte_pairs[encoding] == fit.byte_pairs(enc)
    alone, broken = data.space_counts[encoding].split()
    assert alone[171] == "2" and broken[171] == "3" and broken[28] == "1"


@pytest.mark.parametrize("encoding", ["cl100k_base", "o200k_base"])
def test_the_shipped_wide_spaces_are_read_from_the_encoding(encoding: str) -> None:
    """The estimate prices a run of a Unicode space by what the encoding makes of it: the
    table must be the encoding's own, and a run of 1 to 40 of each, between words, after them
    at a line's end, before symbols or at the text's start, must cost what the encoding adds
    to the text with one ASCII space instead, never less; a lone one at most a token more, a
    run at most 2 and one per 6 characters more (at a line's end a run is one piece, and runs
    that one token holds whole make long runs cheaper: 7 and 8 no-break spaces are one token
    of both encodings, 16 U+3000 of o200k)."""
    import tiktoken
    from ragbudget import use_bundled_tiktoken_files
    from ragbudget.estimate._data import load
    from ragbudget.estimate._model import vocabulary
    from ragbudget.estimate._pieces import plain_spaces

    use_bundled_tiktoken_files()
    enc = tiktoken.get_encoding(encoding)
    shipped = load().wide_spaces[encoding]
    assert shipped == fit.wide_spaces(enc)
    assert len(shipped.split()) == 16  # the Unicode spaces (Zs) but U+0020
    vocab = vocabulary(encoding)
    for char in vocab.wide_costs:
        for size in range(1, 41):
            run = char * size
            for text in (f"10{run}km", f"10 km{run}\n", f"{run}km", f"x.{run}(", f"10{run}"):
                plain, extra = plain_spaces(text, vocab)
                assert plain == text.replace(run, " ")
                over = len(enc.encode_ordinary(plain)) + extra - len(enc.encode_ordinary(text))
                assert 0 <= over <= (1 if size == 1 else 2 + size // 6), (text, over)


def test_no_token_holding_a_line_break_holds_more_spaces_than_the_floor_allows() -> None:
    """Before a line break, the floor counts the spaces past `_SPACES_WITH_BREAK` as runs of
    spaces: no token holding a line break may hold more of them, in either encoding."""
    import tiktoken
    from ragbudget import use_bundled_tiktoken_files
    from ragbudget.estimate._pieces import _SPACES_WITH_BREAK

    use_bundled_tiktoken_files()
    most = 0
    for name in ("cl100k_base", "o200k_base"):
        encoding = tiktoken.get_encoding(name)
        for token in range(encoding.n_vocab):
            try:
                text = encoding.decode_single_token_bytes(token)
            except KeyError:
                continue
            if b"\n" in text or b"\r" in text:
                most = max(most, text.count(b" "))
    assert most == _SPACES_WITH_BREAK


def test_weak_letters_are_counted_apart_from_the_rare() -> None:
    """A weak letter leaves the single-token runs and is counted as `weak`, not as `rare`."""
    from ragbudget.estimate._model import Vocabulary, features

    text = "Ұлттық Ұлы жол ☃"  # ☃: not a single token of this vocabulary
    single = "".join(set(text) - set(" ☃"))
    plain = dict(zip(NAMES, features(text, Vocabulary.build([], [], single)), strict=True))
    weak = Vocabulary.build([], [], single, weak="Ұ")
    split = dict(zip(NAMES, features(text, weak), strict=True))
    assert (plain["weak"], plain["rare"]) == (0, 1)
    assert (split["weak"], split["rare"]) == (2, 1)


@settings(max_examples=300, deadline=None)
@given(
    text=st.text(alphabet=st.characters(codec=None), min_size=1, max_size=400)
    | st.text("qxzjkvbwAEIOUaeio_ 0123.,;{}\nÀèßҰ", min_size=1, max_size=400),
    target=st.sampled_from(("max", "cl100k_base", "o200k_base")),
)
@example(text="AO0AZp", target="max")  # a word in capitals with a rare pair (`ao`)
@example(text=" ".join(["QWERTYUIOPASDFGHJKLZXCVBNM" * 2] * 4), target="max")  # 0.6 a capital
def test_the_bound_of_the_floor_bounds_it(text: str, target: str) -> None:
    """`stages.floor_bound` (what an exact gate could use, docs/estimator.md) is never below the
    floor it bounds: else its share of chunks 'proved below the model' would overstate."""
    import stages
    from ragbudget.estimate._model import floor_tokens, vocabulary

    vocab = vocabulary(target)
    assert stages.floor_bound(text, vocab) >= floor_tokens(text, vocab)


def test_spelled_scripts_count_only_where_their_classes_occur() -> None:
    """The floor looks for characters of scripts spelled a character at a time (Odia in o200k)
    only where their classes occur: the same count as looking everywhere."""
    from ragbudget.estimate._model import Vocabulary, floor_tokens

    odia = "ଓଡ଼ିଆ ଭାଷା"
    single = "".join(set(odia) - {" "})
    spelled = Vocabulary.build([], [], single, iter([single]), floor_spelled=iter([single]))
    plain = Vocabulary.build([], [], single, [single])
    assert spelled.spelled_classes == b"i"
    for text in (odia, "日本語 " + odia, "日本語のテキスト"):
        extra = sum(c in single for c in text)  # each spelled character a token more
        assert floor_tokens(text, spelled) == floor_tokens(text, plain) + extra, text


def test_the_shipped_held_pairs_are_read_from_the_encoding() -> None:
    """The pairs of characters the `other_unknown_cuts` feature counts as held are o200k's own
    (`calibrate.py --tables` keeps the shipped ones, fitted with; `--fit` rewrites them): two
    characters each, one of them non-ASCII, none an ASCII non-letter. The other targets have
    none (docs/estimator.md says why)."""
    import tiktoken
    from ragbudget import use_bundled_tiktoken_files
    from ragbudget.estimate._data import load

    use_bundled_tiktoken_files()
    encs = {name: tiktoken.get_encoding(name) for name in ("cl100k_base", "o200k_base")}
    shipped = load().held
    assert shipped == fit.held_by_target(encs)
    assert shipped["max"] == shipped["cl100k_base"] == ""
    pairs = {shipped["o200k_base"][i : i + 2] for i in range(0, len(shipped["o200k_base"]), 2)}
    assert {"ۇم", "ال", "на", "的人"} <= pairs
    assert not {"جۇ", "ab"} & pairs
    assert all(not p.isascii() and all(c.isalpha() or not c.isascii() for c in p) for p in pairs)


def test_the_fuzzer_measures_every_kind_from_a_fixed_seed() -> None:
    """`tools/estimator/fuzz.py` (docs/estimator.md): every kind makes text of 200 characters
    or more, and the same texts on every run, so its table can be reproduced."""
    import random

    import fuzz

    for kind, make in fuzz.KINDS.items():
        first, again = (make(random.Random(kind), 400) for _ in range(2))
        assert first == again and len(first) >= 200, kind
    rows = fuzz.under_counts(2)
    assert set(rows) == set(fuzz.KINDS)
    assert all(len(under) == len(fuzz.COUNTERS) for under in rows.values())
    assert all(0 <= u <= 100 for under in rows.values() for values in under for u in values)
    # every table reads its 99th percentile one way: interpolated, as numpy's default
    import numpy as np
    import report

    for values in ([5.0] * 99 + [50.0], [5.0] * 98 + [50.0] * 2, [1.0, 2.0, 7.0], [3.0]):
        assert report.quantile(values, 0.99) == pytest.approx(np.percentile(values, 99))
    assert report.quantile([], 0.99) == 0.0


def test_script_costs_are_a_scripts_median_cost_in_fitted_chunks() -> None:
    """Per script (the UTF-8 prefix of its characters), the median over fitted chunks where
    unknown words are half of the words or more of what those words cost per character, kept
    where it is more than the European cost; chunks held out, chunks of known words and
    scripts seen in too few chunks do not count."""
    import tiktoken
    from ragbudget import use_bundled_tiktoken_files

    use_bundled_tiktoken_files()
    enc = tiktoken.get_encoding("o200k_base")
    words = ["ਪੰਜਾਬੀ", "ਭਾਸ਼ਾ", "ਵਿੱਚ", "ਲਿਖਿਆ", "ਗਿਆ", "ਹੈ", "ਅਤੇ", "ਇਹ", "ਕੰਮ", "ਕਰਦਾ"]
    chunks = []
    for i in range(fit.SCRIPT_CHUNKS):
        text = " ".join(words[i % 3 :] * 3)
        chunks.append(Chunk("other_scripts", f"src{i}", "fit", text))
    chunks.append(Chunk("other_scripts", "held", "test", "ਕੰਮ " * 200))  # held out
    chunks.append(Chunk("other_scripts", "known", "fit", "ਕੰਮ " * 200))  # a known word
    costs = []
    for chunk in chunks[: fit.SCRIPT_CHUNKS]:
        found = [w for w in chunk.text.split() if w != "ਕੰਮ"]  # the unknown words
        costs.append(sum(len(enc.encode_ordinary(" " + w)) for w in found) / len("".join(found)))
    costs.sort()
    median = (costs[len(costs) // 2 - 1] + costs[len(costs) // 2]) / 2
    assert fit.script_costs(chunks, enc, ["ਕੰਮ"], 0.1) == f"e0a8:{median:.3f}"
    assert fit.script_costs(chunks, enc, ["ਕੰਮ"], median) == ""  # not more than the least
    assert fit.script_costs(chunks[1:], enc, ["ਕੰਮ"], 0.1) == ""  # too few chunks
    assert fit.script_key("abcਕੰਮ".encode()) == b"\xe0\xa8"
    assert fit.script_key("naïve".encode()) == b"\xc3"
    assert fit.script_key(b"ascii") == b""
