"""Finding the files to ingest: text and code, minus what a person would not want indexed.

Skipped without a word: VCS folders, virtualenvs, `node_modules`, caches, and what `.gitignore`
files exclude (those inside the walked folders, and those above them up to the repository root
unless they hide the walked folder itself). Skipped with a reason in the report: binary files,
files over the size cap, files that are not UTF-8 text, empty files. A file named explicitly is
taken even if `.gitignore` excludes it.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pathspec

__all__ = ["SKIP_DIRS", "Candidate", "read_text", "walk"]

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
        ".pdf",
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
_SNIFF_BYTES = 8192


@dataclass(frozen=True)
class Candidate:
    """A file found by the walk: its resolved path, and whether it was named explicitly."""

    path: Path
    explicit: bool


class _Ignores:
    """The `.gitignore` rules in force at each folder, deepest first when checking."""

    def __init__(self) -> None:
        self._specs: dict[Path, pathspec.GitIgnoreSpec | None] = {}

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

    def ignored(self, path: Path, top: Path, *, is_dir: bool) -> bool:
        """True when the deepest `.gitignore` with a matching rule (from `top` down) excludes it."""
        folder = path.parent
        while True:
            spec = self._spec(folder)
            if spec is not None:
                rel = path.relative_to(folder).as_posix() + ("/" if is_dir else "")
                include = spec.check_file(rel).include
                if include is not None:
                    return bool(include)
            if folder == top or folder.parent == folder:
                return False
            folder = folder.parent


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
        if root.is_file():
            if root not in seen:
                seen.add(root)
                yield Candidate(root, explicit=True)
            continue
        top = _repo_top(root)
        if top != root and ignores.ignored(root, top, is_dir=True):
            top = root  # a folder named explicitly is walked even if a parent .gitignore hides it
        for dirpath, dirnames, filenames in os.walk(root):
            folder = Path(dirpath)
            keep = []
            for name in sorted(dirnames):
                sub = folder / name
                if _skip_dir(sub) or sub == exclude or sub.is_symlink():
                    continue
                if ignores.ignored(sub, top, is_dir=True):
                    continue
                keep.append(name)
            dirnames[:] = keep
            for name in sorted(filenames):
                path = folder / name
                if path in seen or path.is_symlink() or not path.is_file():
                    continue
                if name == ".gitignore" or ignores.ignored(path, top, is_dir=False):
                    continue
                seen.add(path)
                yield Candidate(path, explicit=False)


def read_text(path: Path, max_bytes: int) -> tuple[str | None, bytes | None, str | None]:
    """(text, raw bytes, None) for a readable UTF-8 text file, else (None, None, reason).

    Raises OSError when the file cannot be read at all (the caller reports it as an error).
    """
    if path.suffix.lower() in _BINARY_SUFFIXES:
        return None, None, f"binary file type ({path.suffix})"
    size = path.stat().st_size
    if size > max_bytes:
        return None, None, f"over the size cap ({size:,} > {max_bytes:,} bytes)"
    data = path.read_bytes()
    if not data.strip():
        return None, None, "empty"
    if b"\x00" in data[:_SNIFF_BYTES]:
        return None, None, "binary (NUL bytes)"
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return None, None, f"not UTF-8 text ({exc.reason} at byte {exc.start})"
    return text.removeprefix("\ufeff"), data, None
