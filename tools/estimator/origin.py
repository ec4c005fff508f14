"""Hold out by origin: which package, catalogue domain or file a corpus text comes from.

The calibration corpus (corpus.py) is split into the text the weights are fitted on and the
text they are measured on by *origin*, not by chunk: every text of one origin lands in the same
split, so the held-out figures are measured on packages, catalogues and files the fit never
read. An origin is

- a gettext catalogue domain (`gettext:coreutils`): its translations in every language at once
  (the corpus holds about 80 domains in each of 50 languages);
- a Python package or top-level module: `site:<package>` for site-packages, its `.dist-info`
  metadata included, `stdlib:<package>` for the standard library (its tests by test module);
  botocore's models by service (`botocore:<service>`);
- under /usr/share, a package's documentation directory (`share:doc/<package>`), a vim help
  file, tutor or licence (files: each is its own document), else the top-level directory;
- a chapter of Rust by Example (all its translations), a log file.

`TEST_SHARE` of the origins of each family, by a stable hash, are held out; a family with a
handful of origins (logs: 4 files) keeps at least one on each side.
"""

from __future__ import annotations

import sysconfig
import zlib
from collections.abc import Iterable
from pathlib import Path

STDLIB = Path(sysconfig.get_paths()["stdlib"])
PURELIB = Path(sysconfig.get_paths()["purelib"])
SITE_DIRS = [p for p in dict.fromkeys([PURELIB, STDLIB / "site-packages"]) if p.is_dir()]
SHARE = Path("/usr/share")
TEST_SHARE = 4  # one origin in four is held out


def _name(part: str) -> str:
    """A distribution's or package's name, normalised (`PyYAML-6.0.dist-info` -> `pyyaml`)."""
    if part.endswith((".dist-info", ".egg-info")):
        part = part.rsplit(".", 1)[0].split("-", 1)[0]
    return part.lower().replace("-", "_")


def origin(source: str) -> str:
    """The origin of the corpus text read from the file `source` (see the module docstring)."""
    path = Path(source)
    parts = path.parts
    if path.suffix == ".mo":
        return f"gettext:{path.stem}"
    if "rust-by-example" in parts:
        at = parts.index("rust-by-example")
        return "rust-by-example:" + "/".join(parts[at + 2 : at + 3])
    for root, label in (*((d, "site") for d in SITE_DIRS), (STDLIB, "stdlib")):
        if path.is_relative_to(root):
            rel = path.relative_to(root).parts
            if rel[:2] == ("botocore", "data") and len(rel) > 3:
                return f"botocore:{rel[2]}"
            if rel[0] in ("test", "tests") and len(rel) > 2:
                return f"{label}:{rel[0]}/{rel[1]}"
            return f"{label}:{_name(rel[0])}"
    if path.is_relative_to(SHARE):
        rel = path.relative_to(SHARE).parts
        if rel[0] == "doc" and len(rel) > 2:
            return f"share:doc/{rel[1]}"
        if rel[0] in ("vim", "common-licenses"):
            return f"share:{'/'.join(rel)}"
        return f"share:{rel[0]}"
    return f"file:{source}"


def _hash(name: str) -> int:
    return zlib.crc32(name.encode())


def held_out(origins: Iterable[str]) -> set[str]:
    """The origins held out: one in TEST_SHARE by a stable hash, and at least one of two or
    more origins on each side."""
    ordered = sorted(set(origins), key=lambda name: (_hash(name), name))
    test = {name for name in ordered if _hash(name) % TEST_SHARE == 0}
    if len(ordered) >= 2:
        if not test:
            test = {ordered[0]}
        elif len(test) == len(ordered):
            test.discard(ordered[-1])
    return test
