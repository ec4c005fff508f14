"""Which paths the `ingest` tool may touch: only those under the roots the server allows.

The rule, in full:

1. A path given to `ingest` is resolved (`~` expanded, relative paths taken against each root
   in turn, symlinks followed). If no resolution lies under a root, the answer is "outside the
   allowed roots" and nothing else: not whether it exists, not where a symlink points.
2. Under a root, a path that does not exist is "does not exist under the allowed roots".
3. Each file the walk then finds (and each file named directly) is refused, and reported as
   skipped with the reason, when it is a hard link (`st_nlink > 1`: one of its other names may
   lie outside the roots, and no check short of scanning every file system could tell), unless
   the server runs with `--allow-hard-links`; or when it lies on another file system than the
   deepest root holding it (a mount inside a root: allow the mount point itself as a root).
   Symlinks met by the walk are never followed.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from pathlib import Path

from ragbudget.text import shown

from ragbudget_server.store import StoreError
from ragbudget_server.store.paths import user_path

__all__ = ["OutsideRootsError", "check_ingest_paths", "linked_file_reason"]


class OutsideRootsError(ValueError):
    """A path given to `ingest` is not under an allowed root (or does not exist)."""


def _under(path: Path, roots: Sequence[Path]) -> bool:
    return any(path == root or path.is_relative_to(root) for root in roots)


def check_ingest_paths(paths: Sequence[str], roots: Sequence[Path]) -> list[Path]:
    """Resolve `paths` and refuse any that leave the allowed `roots` (see the module's rule).

    `roots` must already be resolved. Returns the resolved paths, each once.

    Raises:
        OutsideRootsError: naming the offending argument, shortened, and the allowed roots.
    """
    if not roots:
        msg = (
            "ingest is disabled: this server was started without --allow-root; "
            "restart it with `ragbudget serve --allow-root DIR` to let agents index files under DIR"
        )
        raise OutsideRootsError(msg)
    if not paths:
        msg = "paths must name at least one file or folder under the allowed roots"
        raise OutsideRootsError(msg)
    allowed = ", ".join(str(root) for root in roots)
    checked: list[Path] = []
    for raw in paths:
        if not raw or not raw.strip():
            msg = f"paths: {shown(raw)} is not a path; give a file or folder under {allowed}"
            raise OutsideRootsError(msg)
        try:
            first = user_path("paths", raw)  # NUL bytes and unknown ~users are refused here
            relative = not raw.startswith("~") and not Path(raw).is_absolute()
            resolved = [user_path("paths", str(r / raw)) for r in roots] if relative else [first]
        except StoreError as exc:
            raise OutsideRootsError(str(exc)) from None
        inside = [path for path in resolved if _under(path, roots)]
        if not inside:
            msg = (
                f"paths: {shown(raw)} is outside the allowed roots ({allowed}); "
                "only files under those roots can be ingested"
            )
            raise OutsideRootsError(msg)
        existing = [path for path in inside if path.exists()]
        if not existing:
            msg = f"paths: {shown(raw)} does not exist under the allowed roots ({allowed})"
            raise OutsideRootsError(msg)
        checked.append(existing[0])
    return list(dict.fromkeys(checked))


def linked_file_reason(
    path: Path, roots: Sequence[Path], *, allow_hard_links: bool = False
) -> str | None:
    """Why the file at `path` (under `roots`) must not be ingested, or None when it may.

    See rule 3 of the module docstring. Raises OSError when `path` cannot be examined.
    """
    info = path.stat(follow_symlinks=False)
    if not stat.S_ISREG(info.st_mode):
        return None
    holders = [root for root in roots if path.is_relative_to(root)]
    if not holders:
        return "outside the allowed roots"
    root = max(holders, key=lambda r: len(r.parts))
    if info.st_dev != os.stat(root).st_dev:
        return (
            f"on another file system than its root {root} (a mount inside the root); "
            "allow the mount point itself with --allow-root to index it"
        )
    if info.st_nlink > 1 and not allow_hard_links:
        return (
            f"a hard link ({info.st_nlink} names), whose other names may lie outside the "
            "allowed roots; start the server with --allow-hard-links to index hard-linked files"
        )
    return None
