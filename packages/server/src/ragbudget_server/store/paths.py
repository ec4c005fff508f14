"""Turning a caller's path argument into a resolved `Path`, or an error naming the argument."""

from __future__ import annotations

from pathlib import Path

from ragbudget.text import shown

from ragbudget_server.store.errors import StoreError

__all__ = ["user_path"]


def user_path(name: str, value: str) -> Path:
    """`value` with `~` expanded, made absolute and resolved (symlinks followed).

    Raises:
        StoreError: naming `name`, for a NUL byte, a `~user` that names no user, or a path
            the system cannot resolve (a symlink loop); the value is quoted shortened.
    """
    if "\x00" in value:
        msg = f"{name} {shown(value)} contains a NUL byte; give a plain file or folder path"
        raise StoreError(msg)
    try:
        path = Path(value).expanduser()
    except RuntimeError:  # "Could not determine home directory."
        user = value.split("/", 1)[0]
        msg = (
            f"{name} {shown(value)} starts with {shown(user)}, which is no user's home folder; "
            "give an absolute path, or one without '~'"
        )
        raise StoreError(msg) from None
    try:
        return path.resolve()
    except (OSError, RuntimeError, ValueError) as exc:  # a symlink loop, a name too long
        msg = f"{name} {shown(value)} cannot be resolved ({exc}); give another path"
        raise StoreError(msg) from None
