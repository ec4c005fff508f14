"""The families the estimate must be safe on beyond natural text (issue 15), never fitted on.

Real text found on this machine where it exists, generated text (deterministic, seeded) where
no real text is on a build machine; `ORIGIN` says which. Chunks are cut like the corpus's
(100 to 4,000 characters). Nothing is fitted on these families: every chunk is in the `test`
split. (The floor's few constants, in `ragbudget.estimate._floor`, were set by looking at
random strings of the generated kinds made by other code with other seeds.)

Real: markup (HTML, XML, SVG), SQL, config (TOML, YAML, lockfiles), tables (CSV, TSV), e-mail
(the stdlib's test messages), certificates (PEM bundles such as certifi's cacert.pem),
minified (`*.min.js`, `*.min.css`, Sphinx search indexes), paths and URLs (wheel RECORD files:
paths, base64 SHA-256 digests, sizes; URLs from package metadata), JSON escaped inside a JSON
string, rare scripts (gettext catalogues in Cherokee, Shavian, Odia).
Generated: sequences (DNA and protein, FASTA), digests (hex SHA-256/MD5, UUIDs), base64 blobs,
identifiers (API keys, random identifiers, random letters), symbol soup.
"""

from __future__ import annotations

import base64
import fnmatch
import hashlib
import json
import random
import string
import uuid
from collections.abc import Callable, Iterable
from pathlib import Path

import corpus
from corpus import SHARE, SITE_DIRS, STDLIB, Chunk, Segment

ORIGIN = {
    "markup": "real",
    "sql": "real",
    "config": "real",
    "tables": "real",
    "email": "real",
    "certificates": "real",
    "minified": "real",
    "paths_urls": "real",
    "json_escaped": "real",
    "rare_scripts": "real",
    "sequences": "generated",
    "digests": "generated",
    "base64": "generated",
    "identifiers": "generated",
    "symbols": "generated",
}
FAMILIES = tuple(ORIGIN)
ROOTS = [*SITE_DIRS, SHARE / "doc"]


def _find(*patterns: str, roots: Iterable[Path] = ROOTS) -> list[Path]:
    """Files under `roots` whose name matches one of `patterns` (one cached walk per root)."""
    found = set()
    for root in roots:
        by_suffix = corpus._files_by_suffix(root)
        for pattern in patterns:
            suffix = Path(pattern).suffix
            found |= {p for p in by_suffix.get(suffix, []) if fnmatch.fnmatch(p.name, pattern)}
    return sorted(found)


def _escaped(path: Path) -> str:
    return json.dumps({"path": path.name, "content": corpus.read_text(path)})


def _urls(path: Path) -> str:
    lines = corpus.read_text(path).splitlines()
    return "\n".join(ln.split(",", 1)[-1].strip() for ln in lines if "://" in ln)


def _real(rng: random.Random) -> dict[str, list[tuple[Path, Callable[[Path], str]]]]:
    def plain(paths: list[Path], limit: int = 200) -> list[tuple[Path, Callable[[Path], str]]]:
        return [(p, corpus.read_text) for p in corpus._pick(paths, limit, rng)]

    records = [p for d in SITE_DIRS for p in d.glob("*.dist-info/RECORD")]
    metadata = [p for d in SITE_DIRS for p in d.glob("*.dist-info/METADATA")]
    catalogues = [
        p for lang in ("chr", "en@shaw", "or") for p in (corpus.LOCALE / lang).glob("**/*.mo")
    ]
    return {
        "markup": plain(_find("*.html", "*.xml", "*.svg")),
        "sql": plain(_find("*.sql")),
        "config": plain(_find("*.toml", "*.yaml", "*.yml", "*.lock", "*.cfg")),
        "tables": plain(_find("*.csv", "*.tsv")),
        "email": plain(_find("msg_*.txt", roots=[STDLIB / "test"])),
        "certificates": plain(_find("*.pem", "*.crt", roots=[*SITE_DIRS, Path("/etc/ssl")])),
        "minified": plain(_find("*.min.js", "*.min.css", "searchindex.js")),
        "paths_urls": [
            *plain(records, 150),
            *((p, _urls) for p in corpus._pick(metadata, 150, rng)),
        ],
        "json_escaped": [(p, _escaped) for p in corpus._pick(_find("*.json"), 150, rng)],
        "rare_scripts": [(p, corpus.read_mo) for p in catalogues],
    }


def _lines(rng: random.Random, make: Callable[[], str], size: int) -> str:
    out: list[str] = []
    while sum(map(len, out)) < size:
        out.append(make())
    return "\n".join(out)


def _fasta(rng: random.Random, size: int) -> str:
    alphabet = rng.choice(("ACGT", "acgt", "ACDEFGHIKLMNPQRSTVWY"))
    body = "".join(rng.choice(alphabet) for _ in range(size))
    lines = [body[i : i + rng.choice((60, 70, 80))] for i in range(0, size, 60)]
    return f">seq{rng.randrange(10**6)} synthetic\n" + "\n".join(lines)


def _digests(rng: random.Random, size: int) -> str:
    kind = rng.choice(("sha256", "md5", "uuid"))

    def one() -> str:
        if kind == "uuid":
            return str(uuid.UUID(int=rng.getrandbits(128), version=4))
        digest = hashlib.new(kind, rng.randbytes(16)).hexdigest()
        return f"{digest}  file{rng.randrange(1000)}.txt"

    return _lines(rng, one, size)


def _base64(rng: random.Random, size: int) -> str:
    blob = base64.b64encode(rng.randbytes(size * 3 // 4)).decode()
    width = rng.choice((64, 76, 10**6))
    return "\n".join(blob[i : i + width] for i in range(0, len(blob), width))


def _identifiers(rng: random.Random, size: int) -> str:
    kind = rng.choice(("key", "ident", "letters"))
    if kind == "letters":
        return "".join(rng.choice(string.ascii_lowercase) for _ in range(size))
    chars = string.ascii_letters + string.digits

    def one() -> str:
        if kind == "key":
            return rng.choice(("sk-", "ghp_", "AKIA", "xoxb-")) + "".join(
                rng.choice(chars) for _ in range(rng.randint(20, 48))
            )
        return "_".join(
            "".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(2, 9)))
            for _ in range(rng.randint(1, 4))
        )

    return _lines(rng, one, size)


def _symbols(rng: random.Random, size: int) -> str:
    pool = string.punctuation + rng.choice(("", " ", "  \n", string.ascii_letters[:8]))
    return "".join(rng.choice(pool) for _ in range(size))


GENERATORS: dict[str, Callable[[random.Random, int], str]] = {
    "sequences": _fasta,
    "digests": _digests,
    "base64": _base64,
    "identifiers": _identifiers,
    "symbols": _symbols,
}


def _generated(family: str, count: int, seed: int) -> list[Segment]:
    """`count` generated documents of 16 KB, each its own source."""
    rng = random.Random(f"{family}:{seed}")
    return [
        Segment(f"generated:{family}#{i}", "test", text)
        for i in range(count)
        if (text := GENERATORS[family](rng, corpus.SEGMENT))
    ]


def build(per_family: int = 400, *, seed: int = 15) -> list[Chunk]:
    """`per_family` chunks of each family, deterministically (for this machine)."""
    rng = random.Random(seed)
    chunks: list[Chunk] = []
    real = _real(rng)
    for family in FAMILIES:
        segs: list[Segment] = []
        if family in real:
            for path, reader in real[family]:
                try:
                    segs += [
                        Segment(s.source, "test", s.text)
                        for s in corpus._segments(str(path), reader(path))
                    ]
                except (OSError, ValueError, UnicodeError):
                    continue
        else:
            segs = _generated(family, 40, seed)
        chunks += corpus._sample(family, "test", [(1.0, segs)], per_family, rng)
    return chunks
