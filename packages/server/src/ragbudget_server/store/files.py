"""Finding the files to ingest: text, code and documents, minus what a person would not want
indexed.

Skipped without a word: VCS folders, virtualenvs, `node_modules`, caches, and what `.gitignore`
files exclude (those inside the walked folders, and those above them up to the repository root
unless they hide the walked folder itself). Skipped with a reason in the report: symbolic links
(never followed: name the target itself), FIFOs, sockets and devices, binary files, files over
the size cap, text in no encoding that can be detected, empty files, and documents that cannot
be converted (see `ragbudget_server.store.convert`). A file named explicitly is taken even if
`.gitignore` excludes it.
"""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pathspec

from ragbudget_server.store.convert import Converted, Limits, Unindexable, convert, kind_of

__all__ = ["SKIP_DIRS", "Candidate", "read_file", "walk"]

logger = logging.getLogger(__name__)

SKIP_DIRS = frozenset(
    {
        ".git", ".hg", ".svn", ".bzr", "_darcs", "CVS", ".jj",
        ".venv", "venv", "node_modules", "__pycache__", ".tox", ".nox",
        ".mypy_cache", ".pytest_cache", ".ruff_cache", ".hypothesis", ".ragbudget",
        ".ragbudget-demo", ".eggs", ".ipynb_checkpoints",
    }
)  # fmt: skip
"""Folder names never walked into (a folder holding `pyvenv.cfg` is skipped too)."""

_BINARY_SUFFIXES = frozenset(
    [
        ".png",
        ".jpg",
        ".jpeg",
        ".gif",
        ".bmp",
        ".ico",
        ".webp",
        ".tif",
        ".tiff",
        ".zip",
        ".gz",
        ".tgz",
        ".bz2",
        ".xz",
        ".zst",
        ".7z",
        ".rar",
        ".tar",
        ".whl",
        ".egg",
        ".jar",
        ".war",
        ".so",
        ".dylib",
        ".dll",
        ".exe",
        ".bin",
        ".o",
        ".a",
        ".lib",
        ".pyc",
        ".pyo",
        ".pyd",
        ".class",
        ".wasm",
        ".woff",
        ".woff2",
        ".ttf",
        ".otf",
        ".eot",
        ".mp3",
        ".mp4",
        ".wav",
        ".ogg",
        ".flac",
        ".avi",
        ".mov",
        ".mkv",
        ".db",
        ".sqlite",
        ".sqlite3",
        ".parquet",
        ".npy",
        ".npz",
        ".pkl",
        ".pickle",
        ".onnx",
        ".pt",
        ".safetensors",
    ]
)
_OLD_OFFICE = frozenset([".doc", ".xls", ".ppt"])
LINK_REASON = "a symbolic link, not followed (ingest its target by its own path)"


@dataclass(frozen=True)
class Candidate:
    """A file found by the walk: its path, whether it was named explicitly, and why it must be
    left out without being read (a link, a FIFO), if it must."""

    path: Path
    explicit: bool
    skip: str | None = None


def _special(path: Path) -> str | None:
    """Why `path` is not a file to read (a link, a FIFO, a socket, a device), else None."""
    try:
        mode = path.lstat().st_mode
    except OSError:
        return None  # gone since listed: the read says so
    if stat.S_ISLNK(mode):
        return LINK_REASON
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    what = "a FIFO (named pipe)" if stat.S_ISFIFO(mode) else (
        "a socket" if stat.S_ISSOCK(mode) else "a device")  # fmt: skip
    return f"not a regular file: {what}"


class _Ignores:
    """The `.gitignore` rules in force at each folder, deepest first when checking."""

    def __init__(self) -> None:
        self._specs: dict[Path, pathspec.GitIgnoreSpec | None] = {}
        self._chains: dict[tuple[Path, Path], list[tuple[Path, pathspec.GitIgnoreSpec]]] = {}

    def _spec(self, folder: Path) -> pathspec.GitIgnoreSpec | None:
        if folder not in self._specs:
            spec = None
            gitignore = folder / ".gitignore"
            if gitignore.is_file():
                try:
                    lines = gitignore.read_text(encoding="utf-8", errors="replace").splitlines()
                    spec = pathspec.GitIgnoreSpec.from_lines(lines)
                except OSError as exc:
                    logger.warning("cannot read %s: %s", gitignore, exc)
            self._specs[folder] = spec
        return self._specs[folder]

    def chain(self, folder: Path, top: Path) -> list[tuple[Path, pathspec.GitIgnoreSpec]]:
        """The `.gitignore` rules from `folder` up to `top`, deepest first (most folders have
        none: a file in one is then checked at no cost)."""
        key = (folder, top)
        if key not in self._chains:
            spec = self._spec(folder)
            own = [(folder, spec)] if spec is not None else []
            last = folder == top or folder.parent == folder
            self._chains[key] = own + ([] if last else self.chain(folder.parent, top))
        return self._chains[key]

    def ignored(self, path: Path, top: Path, *, is_dir: bool) -> bool:
        """True when the deepest `.gitignore` with a matching rule (from `top` down) excludes it."""
        for folder, spec in self.chain(path.parent, top):
            rel = path.relative_to(folder).as_posix() + ("/" if is_dir else "")
            include = spec.check_file(rel).include
            if include is not None:
                return bool(include)
        return False


def _repo_top(start: Path) -> Path:
    """The enclosing repository's root (a folder holding `.git`), else `start` itself."""
    for folder in (start, *start.parents):
        if (folder / ".git").exists():
            return folder
    return start


def _skip_dir(path: Path) -> bool:
    return path.name in SKIP_DIRS or (path / "pyvenv.cfg").is_file()


def walk(roots: list[Path], *, exclude: Path | None = None) -> Iterator[Candidate]:
    """Every file under `roots` worth reading, sorted per folder, each path once.

    `exclude` is a folder never walked into (the store's own database folder).
    """
    ignores = _Ignores()
    seen: set[Path] = set()
    for root in roots:
        if not root.is_dir():
            if root not in seen:
                seen.add(root)
                yield Candidate(root, explicit=True, skip=_special(root))
            continue
        top = _repo_top(root)
        if top != root and ignores.ignored(root, top, is_dir=True):
            top = root  # a folder named explicitly is walked even if a parent .gitignore hides it
        for dirpath, dirnames, filenames in os.walk(root):
            folder = Path(dirpath)
            keep = []
            links = []
            for name in sorted(dirnames):
                sub = folder / name
                if _skip_dir(sub) or sub == exclude or ignores.ignored(sub, top, is_dir=True):
                    continue
                if sub.is_symlink():  # named in the report, never walked into
                    links.append(name)
                    continue
                keep.append(name)
            dirnames[:] = keep
            for name in sorted([*filenames, *links]):
                path = folder / name
                if path in seen or name == ".gitignore":
                    continue
                rules = ignores.chain(folder, top)  # is_dir costs a stat: only when needed
                if rules and ignores.ignored(path, top, is_dir=path.is_dir()):
                    continue
                seen.add(path)
                yield Candidate(path, explicit=False, skip=_special(path))


def read_file(
    path: Path, max_bytes: int, max_document_bytes: int
) -> tuple[Converted | None, bytes | None, str | None]:
    """(its text, its raw bytes, None) for a file that can be indexed, else (None, None, why).

    A plain text file may hold at most `max_bytes`; a document (PDF, Office) at most
    `max_document_bytes` on disk, and `max_bytes` characters of text once converted. Sizes are
    checked before anything is read. Raises OSError when the file cannot be read at all (the
    caller reports it as an error).
    """
    suffix = path.suffix.lower()
    if suffix in _BINARY_SUFFIXES:
        return None, None, f"binary file type ({path.suffix})"
    if suffix in _OLD_OFFICE:
        reason = f"binary file type ({path.suffix}: an old Office format; save it as {suffix}x)"
        return None, None, reason
    kind = kind_of(path)
    cap = max_document_bytes if kind is not None and kind.extra else max_bytes
    size = path.stat().st_size
    if size > cap:
        return None, None, f"over the size cap ({size:,} > {cap:,} bytes)"
    data = path.read_bytes()
    if not data.strip():
        return None, None, "empty"
    try:
        converted = convert(path, data, Limits(max_text_chars=max_bytes))
    except Unindexable as exc:
        return None, None, exc.reason
    return converted, data, None
