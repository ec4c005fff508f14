"""Which paths the `ingest` tool may touch: only those under the roots the server allows."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

__all__ = ["OutsideRootsError", "check_ingest_paths"]


class OutsideRootsError(ValueError):
    """A path given to `ingest` is not under an allowed root (or does not exist)."""


def _under(path: Path, roots: Sequence[Path]) -> bool:
    return any(path == root or path.is_relative_to(root) for root in roots)


def check_ingest_paths(paths: Sequence[str], roots: Sequence[Path]) -> list[Path]:
    """Resolve `paths` and refuse any that leave the allowed `roots`.

    Relative paths are taken against the roots in order (the first root where the path exists
    wins). Each path is resolved with symlinks followed, so a link under a root that points
    outside it is refused; the resolved path is what gets ingested. Links met further down a
    folder are never followed by the store's walk, so they cannot leak either (a test checks
    this). `roots` must already be resolved.

    Raises:
        OutsideRootsError: with a message naming the offending path and the allowed roots.
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
        if not raw or not raw.strip() or "\x00" in raw:
            msg = f"paths: {raw!r} is not a usable path; give a file or folder under {allowed}"
            raise OutsideRootsError(msg)
        given = Path(raw).expanduser()
        candidates = [given] if given.is_absolute() else [root / given for root in roots]
        existing = [c for c in candidates if c.exists()]
        if not existing:
            msg = f"paths: {raw} does not exist under the allowed roots ({allowed})"
            raise OutsideRootsError(msg)
        resolved = existing[0].resolve()
        if not _under(resolved, roots):
            msg = (
                f"paths: {raw} resolves to {resolved}, outside the allowed roots ({allowed}); "
                "only files under those roots can be ingested"
            )
            raise OutsideRootsError(msg)
        checked.append(resolved)
    return list(dict.fromkeys(checked))
