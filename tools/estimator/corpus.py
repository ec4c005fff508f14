"""Build the estimator's calibration corpus from real public text found on this machine.

Every family draws retrieval-sized chunks (100 to 4,000 characters, log-uniform lengths,
starting at a line boundary) from files that ship with Python, its site-packages, and the
operating system (`/usr/share`, `/var/log`). The split into the text the weights are fitted on
(`fit`) and the text they are measured on (`test`) is by origin (origin.py): whole packages,
gettext domains (in every language) and files are held out, so the held-out figures are
measured on sources the fitting never read. The site-packages are the running environment's:
run after `make bootstrap` (the project's packages and their dev group, as `make
bench-estimator` does) to reproduce the docs' figures; other packages installed there (the
docs group) change the corpus.

Families (what a retrieval index typically holds):

- code: Python (stdlib, site-packages), C headers/sources, JavaScript, shell scripts.
- prose: English running text (pydoc topics, licenses, vim help and tutor, package READMEs),
  kept only where letters and spaces dominate.
- markdown: `*.md` files and markdown package descriptions (METADATA).
- json: botocore service models, examples and paginators, cfn-lint schemas, iso-codes; a third
  of the chunks re-serialised compactly (API responses are rarely pretty-printed).
- cjk: gettext catalogues (ja, ko, zh), vim tutors, the stdlib's `test/cjkencodings/*-utf8.txt`,
  Rust by Example in Chinese/Japanese/Korean when a Rust toolchain is installed.
- cyrillic_greek: gettext catalogues and vim tutors in ru, uk, bg, sr, be, mk, el.
- european: the same for Latin-script languages with diacritics (de, fr, es, it, pt, pl, ...).
- other_scripts: gettext catalogues in Arabic, Hebrew, Persian, Urdu, the Indic scripts, Thai,
  Lao, Khmer, Burmese, Georgian, Armenian, Amharic and Sinhala.
- logs: `/var/log` (dpkg, apt, alternatives): timestamps, versions, paths.
- emoji_chat: SYNTHETIC. Real short sentences (gettext message ids) laid out as chat lines with
  emoji from rich's emoji table mixed in; no real chat logs exist on a build machine.
"""

from __future__ import annotations

import ast
import functools
import gzip
import html.parser
import itertools
import json
import math
import os
import random
import re
import struct
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

from origin import SHARE, SITE_DIRS, STDLIB, held_out, origin

FAMILIES = (
    "code",
    "prose",
    "markdown",
    "json",
    "cjk",
    "cyrillic_greek",
    "european",
    "other_scripts",
    "logs",
    "emoji_chat",
)

MIN_CHARS = 100
MAX_CHARS = 4000
SEGMENT = 16_000

LOCALE = SHARE / "locale"
VIM = next(iter(sorted(SHARE.glob("vim/vim*/"))), SHARE / "vim" / "vim90")
RUSTUP = Path.home() / ".rustup" / "toolchains"

CJK_LANGS = ("ja", "ko", "zh_CN", "zh_TW", "zh_HK")
CYR_GREEK_LANGS = ("ru", "uk", "bg", "sr", "be", "mk", "el")
EURO_LANGS = ("de", "fr", "es", "it", "pt", "pt_BR", "pl", "cs", "nl", "sv", "da", "hu", "ro")
EURO_LANGS += ("fi", "sk", "tr", "vi", "hr", "ca")
OTHER_LANGS = ("ar", "he", "fa", "ur", "hi", "mr", "ne", "bn", "pa", "gu", "ta", "te", "kn", "ml")
OTHER_LANGS += ("si", "th", "lo", "km", "my", "ka", "hy", "am")


@dataclass(frozen=True)
class Chunk:
    """One calibration sample."""

    family: str
    source: str
    split: str
    text: str


@dataclass(frozen=True)
class Segment:
    source: str
    split: str
    text: str


def _segments(source: str, text: str, split: str = "") -> Iterator[Segment]:
    """Cut a document at line boundaries into ~16 KB segments (all in `split`)."""
    start = 0
    while start < len(text):
        end = min(len(text), start + SEGMENT)
        if end < len(text):
            newline = text.rfind("\n", start + SEGMENT // 2, end)
            end = newline + 1 if newline > 0 else end
        piece = text[start:end]
        if len(piece) >= MIN_CHARS:
            yield Segment(source, split, piece)
        start = end


# --- readers -------------------------------------------------------------------------------


def read_text(path: Path) -> str:
    data = path.read_bytes()
    if path.suffix == ".gz":
        data = gzip.decompress(data)
    return data.decode("utf-8", errors="replace").replace("\r\n", "\n")


def read_mo(path: Path, *, ids: bool = False) -> str:
    """The translated strings (or the English message ids) of a gettext catalogue."""
    data = path.read_bytes()
    magic = struct.unpack("<I", data[:4])[0]
    order = "<" if magic == 0x950412DE else ">"
    _, count, ids_at, strs_at = struct.unpack(order + "4I", data[4:20])
    table = ids_at if ids else strs_at
    entries = struct.iter_unpack(order + "2I", data[table : table + 8 * count])
    out = [
        data[offset : offset + length].decode("utf-8", errors="replace")
        for length, offset in entries
    ]
    return "\n".join(s.replace("\x00", "\n") for s in out if s and not s.startswith("Project-Id"))


class _HTMLText(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []
        self._skip = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("script", "style", "nav"):
            self._skip += 1
        elif tag in ("p", "div", "li", "pre", "h1", "h2", "h3", "br", "tr"):
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style", "nav") and self._skip:
            self._skip -= 1

    def handle_data(self, data: str) -> None:
        if not self._skip:
            self.parts.append(data)


def read_html(path: Path) -> str:
    parser = _HTMLText()
    parser.feed(read_text(path))
    return re.sub(r"\n\s*\n+", "\n\n", "".join(parser.parts)).strip()


def read_pydoc_topics(path: Path) -> str:
    """The plain-text Python reference topics (pydoc_data/topics.py holds them as a dict)."""
    for node in ast.parse(read_text(path)).body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict):
            topics = ast.literal_eval(node.value)
            return "\n\n".join(str(v) for v in topics.values())
    return ""


def read_metadata_body(path: Path, content_type: str) -> str:
    text = read_text(path)
    head, _, body = text.partition("\n\n")
    if content_type not in head.lower():
        return ""
    return body


def read_json(path: Path, *, compact: bool) -> str:
    text = read_text(path)
    if not compact:
        return text
    try:
        value = json.loads(text)
    except ValueError:
        return ""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


# --- sources per family --------------------------------------------------------------------

Reader = Callable[[Path], str]


def _pick(paths: Iterable[Path], limit: int, rng: random.Random) -> list[Path]:
    found = sorted({p for p in paths if p.is_file() and not p.is_symlink()})
    rng.shuffle(found)
    return found[:limit]


def _locale_files(langs: Iterable[str]) -> list[Path]:
    return [p for lang in langs for p in (LOCALE / lang / "LC_MESSAGES").glob("*.mo")] + [
        p for lang in langs for p in (VIM / "lang" / lang / "LC_MESSAGES").glob("*.mo")
    ]


def _tutors(langs: Iterable[str]) -> list[Path]:
    return [p for lang in langs for p in (VIM / "tutor").glob(f"tutor.{lang.lower()}*.utf-8")]


@functools.cache
def _files_by_suffix(root: Path) -> dict[str, list[Path]]:
    """Every file under `root` by suffix, from one walk (globbing `**` again and again is slow)."""
    found: dict[str, list[Path]] = {}
    for dirpath, _, names in os.walk(root):
        for name in names:
            path = Path(dirpath, name)
            found.setdefault(path.suffix, []).append(path)
    return found


def _site(suffix: str) -> list[Path]:
    return [p for d in SITE_DIRS for p in _files_by_suffix(d).get(suffix, [])]


def _share(suffix: str, under: str = "") -> list[Path]:
    paths = _files_by_suffix(SHARE).get(suffix, [])
    return [p for p in paths if str(p).startswith(str(SHARE / under))] if under else paths


def _metadata() -> list[Path]:
    return [p for d in SITE_DIRS for p in d.glob("*.dist-info/METADATA")]


def _sources(rng: random.Random) -> dict[str, list[tuple[float, list[tuple[Path, Reader]]]]]:
    """family -> [(weight, [(path, reader), ...]), ...]"""

    def plain(paths: Iterable[Path], limit: int = 400) -> list[tuple[Path, Reader]]:
        return [(p, read_text) for p in _pick(paths, limit, rng)]

    def mo(paths: Iterable[Path], limit: int = 400) -> list[tuple[Path, Reader]]:
        return [(p, read_mo) for p in _pick(paths, limit, rng)]

    def compact(p: Path) -> str:
        return read_json(p, compact=True)

    def md_meta(p: Path) -> str:
        return read_metadata_body(p, "text/markdown")

    def prose_meta(p: Path) -> str:
        return read_metadata_body(p, "description-content-type: text/x-rst") or read_metadata_body(
            p, "description-content-type: text/plain"
        )

    rust_cjk = [
        p
        for lang in ("zh", "ja", "ko")
        for p in RUSTUP.glob(f"*/share/doc/rust/html/rust-by-example/{lang}/**/*.html")
        if p.name not in ("print.html", "404.html", "toc.html")
    ]
    rust_euro = [
        p
        for p in RUSTUP.glob("*/share/doc/rust/html/rust-by-example/es/**/*.html")
        if p.name not in ("print.html", "404.html", "toc.html")
    ]
    botocore = [p for d in SITE_DIRS for p in d.glob("botocore/data/*/*/*.json*")]
    json_files = _site(".json") + list(SHARE.glob("iso-codes/json/*.json"))
    licenses = list((SHARE / "common-licenses").glob("*"))
    return {
        "code": [
            (0.55, plain(STDLIB.glob("**/*.py"), 600)),
            (0.15, plain(_site(".py"), 400)),
            (0.15, plain([*_site(".c"), *_site(".h"), *_share(".c"), *_share(".h")], 200)),
            (0.10, plain([*_site(".js"), *_share(".js", "doc")], 100)),
            (0.05, plain([*_site(".sh"), *_share(".sh")], 100)),
        ],
        "prose": [
            (0.35, [(STDLIB / "pydoc_data" / "topics.py", read_pydoc_topics)]),
            (0.2, plain(licenses, 50)),
            (0.2, plain([VIM / "tutor" / "tutor", *(VIM / "doc").glob("*.txt")], 200)),
            (0.25, [(p, prose_meta) for p in _pick(_metadata(), 300, rng)]),
        ],
        "markdown": [
            (0.5, plain([*_site(".md"), *_share(".md", "doc")], 400)),
            (0.5, [(p, md_meta) for p in _pick(_metadata(), 400, rng)]),
        ],
        "json": [
            (0.35, plain(botocore, 300)),
            (0.3, plain(json_files, 400)),
            (0.35, [(p, compact) for p in _pick([*botocore, *json_files], 300, rng)]),
        ],
        "cjk": [
            (0.55, mo(_locale_files(CJK_LANGS), 300)),
            (
                0.1,
                plain(
                    [
                        *_tutors(("ja", "ko", "zh")),
                        *(STDLIB / "test" / "cjkencodings").glob("*-utf8.txt"),
                    ]
                ),
            ),
            (0.35, [(p, read_html) for p in _pick(rust_cjk, 150, rng)]),
        ],
        "cyrillic_greek": [
            (0.8, mo(_locale_files(CYR_GREEK_LANGS), 400)),
            (0.2, plain(_tutors(CYR_GREEK_LANGS))),
        ],
        "european": [
            (0.7, mo(_locale_files(EURO_LANGS), 500)),
            (0.2, plain(_tutors(EURO_LANGS))),
            (0.1, [(p, read_html) for p in _pick(rust_euro, 100, rng)]),
        ],
        "other_scripts": [
            (1.0, mo(_locale_files(OTHER_LANGS), 600)),
        ],
        "logs": [
            (1.0, plain([*Path("/var/log").glob("*.log"), *Path("/var/log").glob("*/*.log")])),
        ],
    }


# --- sampling ------------------------------------------------------------------------------

_PROSE_OK = re.compile(r"[A-Za-z ,.;:'\"()\-\n]")


def _accept(family: str, text: str) -> bool:
    if family == "prose":
        return (
            len(_PROSE_OK.findall(text)) >= 0.93 * len(text) and text.count("\n") < len(text) / 30
        )
    if family == "cjk":
        return len(re.findall(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]", text)) >= 0.25 * len(
            text
        )
    if family == "cyrillic_greek":
        return len(re.findall(r"[\u0370-\u03ff\u0400-\u04ff]", text)) >= 0.4 * len(text)
    if family == "other_scripts":  # Armenian through Ethiopic, Sinhala through Myanmar, Georgian
        return len(re.findall(r"[\u0530-\u137f\u1780-\u17ff]", text)) >= 0.4 * len(text)
    if family == "european":
        return bool(re.search(r"[\u00c0-\u024f]", text)) and not re.search(r"[\u0400-\u04ff]", text)
    return True


def _cut(text: str, rng: random.Random) -> str:
    length = int(math.exp(rng.uniform(math.log(MIN_CHARS), math.log(MAX_CHARS))))
    if len(text) <= length:
        return text
    start = rng.randrange(len(text) - length + 1)
    newline = text.find("\n", start, start + length // 2)
    start = newline + 1 if newline >= 0 and len(text) - newline - 1 >= MIN_CHARS else start
    return text[start : start + length]


def _emoji_table() -> list[str]:
    for d in SITE_DIRS:
        path = d / "rich" / "_emoji_codes.py"
        if path.is_file():
            return sorted(set(re.findall(r'"([^"\\]+)",?\n', read_text(path))) - {""})
    return ["\U0001f600", "\U0001f44d", "\u2764\ufe0f", "\U0001f389", "\U0001f525", "\U0001f602"]


def _emoji_chat(count: int, rng: random.Random, split: str, test: set[str]) -> list[Chunk]:
    """Real short sentences (gettext msgids) as chat lines with emoji mixed in (synthetic);
    those of the catalogue domains in `test` for the test split, the others for the fit."""
    lines: list[str] = []
    for path in _pick(_locale_files(("de", "fr", "es")), 60, rng):
        if (origin(str(path)) in test) == (split == "test"):
            lines += [ln for ln in read_mo(path, ids=True).splitlines() if 8 <= len(ln) <= 160]
    half = sorted(set(lines))
    emoji = [e for e in _emoji_table() if not e.isascii()]
    users = ["alice", "bob", "carol", "dave", "erin", "frank"]
    out = []
    for i in range(count):
        target = int(math.exp(rng.uniform(math.log(MIN_CHARS), math.log(MAX_CHARS))))
        parts: list[str] = []
        size = 0
        while size < target:
            message = rng.choice(half) if half else "ok"
            marks = "".join(rng.choice(emoji) for _ in range(rng.choice((0, 1, 1, 2, 3, 5))))
            line = f"{rng.choice(users)}: {message} {marks}".rstrip()
            if rng.random() < 0.15:
                line = f"{rng.choice(users)}: {marks or rng.choice(emoji)}"
            parts.append(line)
            size += len(line) + 1
        out.append(Chunk("emoji_chat", f"synthetic#{i}", split, "\n".join(parts)[:MAX_CHARS]))
    return out


def _sample(
    family: str,
    split: str,
    pools: list[tuple[float, list[Segment]]],
    count: int,
    rng: random.Random,
) -> list[Chunk]:
    """Draw `count` chunks of one split, segments weighted by their length within a group."""
    groups = []
    for weight, segs in pools:
        mine = [s for s in segs if s.split == split]
        if mine:
            groups.append((weight, mine, list(itertools.accumulate(len(s.text) for s in mine))))
    out: list[Chunk] = []
    tries = 0
    while groups and len(out) < count and tries < count * 50:
        tries += 1
        _, segs, cum = rng.choices(groups, [g[0] for g in groups])[0]
        seg = rng.choices(segs, cum_weights=cum)[0]
        text = _cut(seg.text, rng)
        if len(text) >= MIN_CHARS and _accept(family, text):
            out.append(Chunk(family, seg.source, split, text))
    return out


def build_corpus(per_family: int = 2000, *, seed: int = 20240601) -> list[Chunk]:
    """Sample `per_family` chunks for each family and split (fit and test), deterministically;
    the split is by origin (origin.py), decided per family."""
    rng = random.Random(seed)
    chunks: list[Chunk] = []
    domains: set[str] = set()
    for family, groups in _sources(rng).items():
        read: list[tuple[float, list[Segment]]] = []
        for weight, entries in groups:
            segs: list[Segment] = []
            for path, reader in entries:
                try:
                    segs += _segments(str(path), reader(path))
                except (OSError, ValueError, SyntaxError, struct.error):
                    continue
            read.append((weight, segs))
        test = held_out(origin(s.source) for _, segs in read for s in segs)
        domains |= {name for name in test if name.startswith("gettext:")}
        pools = [
            (weight, [replace(s, split=_split(s, test)) for s in segs]) for weight, segs in read
        ]
        for split in ("fit", "test"):
            chunks += _sample(family, split, pools, per_family, rng)
    for split in ("fit", "test"):
        chunks += _emoji_chat(per_family, rng, split, domains)
    return chunks


def _split(segment: Segment, test: set[str]) -> str:
    return "test" if origin(segment.source) in test else "fit"


if __name__ == "__main__":
    import collections
    import time

    t0 = time.perf_counter()
    corpus = build_corpus()
    stats: collections.Counter[tuple[str, str]] = collections.Counter()
    chars: collections.Counter[str] = collections.Counter()
    origins: dict[tuple[str, str], set[str]] = collections.defaultdict(set)
    for c in corpus:
        stats[c.family, c.split] += 1
        chars[c.family] += len(c.text)
        origins[c.family, c.split].add(origin(c.source))
    for fam in FAMILIES:
        print(
            f"{fam:15} fit={stats[fam, 'fit']:5} test={stats[fam, 'test']:5} "
            f"chars={chars[fam]:>9,} origins fit={len(origins[fam, 'fit'])} "
            f"test={len(origins[fam, 'test'])}: {sorted(origins[fam, 'test'])[:8]}"
        )
    print(f"built in {time.perf_counter() - t0:.1f}s")
