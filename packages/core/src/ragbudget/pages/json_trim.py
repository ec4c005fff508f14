"""Shortening a JSON value until its rendering fits, so that it still parses and keeps its shape.

Nothing is ever rewritten, only left out, and only at the end of something: trailing items of a
list, trailing characters of a string (cut back to a line boundary when there is one), and, as
a last resort, trailing keys of an object. Every such cut is reported as a `Cut` (where, what
kind, how much was kept of how much), which is what a continuation needs to serve the rest.

Lists and strings keep their types, so a value trimmed this way still matches a JSON schema
unless the schema sets minimums (`minItems`, `minLength`, a `required` key dropped as a last
resort): the middleware checks that before it sends trimmed structured content.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ragbudget.fitting import largest_fitting, snap_to_boundary

__all__ = [
    "Cut",
    "CutKind",
    "JsonPath",
    "dumps",
    "get_path",
    "parse_json",
    "path_label",
    "replace_path",
    "trim",
]

JsonPath = tuple[str | int, ...]
"""Keys and indexes from the root down to one value."""

CutKind = Literal["items", "chars", "keys"]
"""What a cut counts: list items, string characters, or object keys."""

Fits = Callable[[Any], bool]


@dataclass(frozen=True)
class Cut:
    """One place where a value was shortened: `kept` of `total` units remain, at its start."""

    path: JsonPath
    kind: CutKind
    kept: int
    total: int

    def describe(self) -> str:
        """E.g. `$.items: kept 120 of 5,000 items`."""
        return f"{path_label(self.path)}: kept {self.kept:,} of {self.total:,} {self.kind}"


def dumps(value: Any) -> str:
    """Compact JSON with non-ASCII kept as is: the rendering fastmcp gives a dict or list result."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def parse_json(text: str) -> Any:
    """The list or object `text` holds, or None when it is not one."""
    if not text.lstrip().startswith(("{", "[")):
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, (dict, list)) else None


def path_label(path: JsonPath) -> str:
    """`$`, `$.items`, `$.items[3].log`: a path as an agent reads it."""
    parts = ["$"]
    for step in path:
        parts.append(f"[{step}]" if isinstance(step, int) else f".{step}")
    return "".join(parts)


def get_path(root: Any, path: Sequence[str | int]) -> Any:
    """The value at `path` under `root`."""
    for step in path:
        root = root[step]
    return root


def replace_path(root: Any, path: Sequence[str | int], new: Any) -> Any:
    """A copy of `root` with the value at `path` replaced by `new`; only the containers on the
    path are copied (shallowly), so the caller's value is never modified."""
    if not path:
        return new
    head, rest = path[0], path[1:]
    copy: Any = list(root) if isinstance(root, list) else dict(root)
    copy[head] = replace_path(root[head], rest, new)
    return copy


def _prefix(value: Any, kept: int) -> Any:
    if isinstance(value, str):
        return value[:kept]
    if isinstance(value, list):
        return value[:kept]
    return dict(list(value.items())[:kept])


def snap_text(text: str, end: int) -> int:
    """Move a cut at `end` back to the last line boundary before it (just after the newline);
    when the first line alone is longer than `end`, to a paragraph, sentence or word boundary."""
    if end >= len(text):
        return end
    newline = text.rfind("\n", 0, end)
    if newline >= 0:
        return newline + 1
    return snap_to_boundary(text, end)


def _kind(value: Any) -> CutKind:
    if isinstance(value, str):
        return "chars"
    return "items" if isinstance(value, list) else "keys"


class _Trimmer:
    """Shrinks one node at a time, checking the whole root with `fits` after each step."""

    def __init__(self, fits: Fits, share: float) -> None:
        self.fits = fits
        self.share = share  # the first guess of how much of a node fits

    def shrink(self, root: Any, path: JsonPath, node: Any) -> tuple[Any, list[Cut], bool]:
        """`root` with `node` (at `path`) shortened as little as needed, its cuts, and whether
        it now fits (False: `node` is at its smallest and the root is still too big)."""
        if isinstance(node, dict):
            return self._shrink_object(root, path, node)
        if not isinstance(node, (str, list)) or not node:
            return root, [], self.fits(root)
        return self._shrink_sequence(root, path, node)

    def _keep(self, root: Any, path: JsonPath, node: Any, kept: int) -> Any:
        return replace_path(root, path, _prefix(node, kept))

    def _largest(self, root: Any, path: JsonPath, node: Any, limit: int) -> int:
        guess = max(1, int(len(node) * self.share))
        return (
            largest_fitting(
                lambda k: self.fits(self._keep(root, path, node, k)), limit, guess=guess
            )
            or 0
        )

    def _shrink_sequence(
        self, root: Any, path: JsonPath, node: str | list[Any]
    ) -> tuple[Any, list[Cut], bool]:
        total = len(node)
        kept = self._largest(root, path, node, total - 1)
        if isinstance(node, str) and kept:
            kept = max(1, snap_text(node, kept))
        if kept:
            cut = Cut(path, _kind(node), kept, total)
            return self._keep(root, path, node, kept), [cut], True
        if isinstance(node, list):  # not even one whole item fits: shorten the first one
            first = self._keep(root, path, node, 1)
            shrunk, inner, fitted = self.shrink(first, (*path, 0), node[0])
            if fitted:
                return shrunk, [*inner, Cut(path, "items", 1, total)], True
        empty = self._keep(root, path, node, 0)
        return empty, [Cut(path, _kind(node), 0, total)], self.fits(empty)

    def _shrink_object(
        self, root: Any, path: JsonPath, node: dict[str, Any]
    ) -> tuple[Any, list[Cut], bool]:
        # Every value at its smallest, then each grown back, smallest first, as far as it fits:
        # as many values as possible stay whole, and the largest takes what is left.
        minimal, cuts = _minimal(node, path)
        root = replace_path(root, path, minimal)
        if not self.fits(root):
            return self._drop_keys(root, path, cuts)
        depth = len(path)
        by_key = {key: [c for c in cuts if c.path[depth] == key] for key in node}
        growable = [key for key in node if by_key[key]]
        for key in sorted(growable, key=lambda k: len(dumps(node[k]))):
            whole = replace_path(root, (*path, key), node[key])
            if self.fits(whole):
                root, by_key[key] = whole, []
                continue
            grown, inner, fitted = self.shrink(whole, (*path, key), node[key])
            if fitted:
                root, by_key[key] = grown, inner
            break
        return root, [c for key in node for c in by_key[key]], True

    def _drop_keys(self, root: Any, path: JsonPath, cuts: list[Cut]) -> tuple[Any, list[Cut], bool]:
        """The last resort: even the smallest values do not fit; leave out trailing keys."""
        current = get_path(root, path)
        total = len(current)
        kept = self._largest(root, path, current, total - 1) if total else 0
        names = set(list(current)[:kept])
        kept_cuts = [c for c in cuts if c.path[len(path)] in names]
        root = self._keep(root, path, current, kept)
        return root, [*kept_cuts, Cut(path, "keys", kept, total)], self.fits(root)


def _minimal(node: Any, path: JsonPath) -> tuple[Any, list[Cut]]:
    """`node` with every list and string in it emptied (objects keep their keys), and the cuts."""
    if isinstance(node, dict):
        out: dict[str, Any] = {}
        cuts: list[Cut] = []
        for key, value in node.items():
            out[key], inner = _minimal(value, (*path, key))
            cuts += inner
        return out, cuts
    if isinstance(node, (str, list)) and node:
        return node[:0], [Cut(path, _kind(node), 0, len(node))]
    return node, []


def trim(
    value: Any, fits: Fits, *, share: float = 0.5, known_over: bool = False
) -> tuple[Any, list[Cut], bool]:
    """The largest shortening of `value` that `fits`, the cuts made, and whether it fits.

    `fits(candidate)` must be monotone (a shorter candidate never fits less) and is called with
    whole candidates; `value` itself is not modified. `share` is a first guess of the part of
    a list or string that fits (searches start there and gallop); `known_over` skips the first
    check of the whole value when the caller already measured it. When even the
    smallest shape (empty lists and strings, no keys) does not fit, that shape is returned
    with `False`.
    """
    if not known_over and fits(value):
        return value, [], True
    return _Trimmer(fits, min(max(share, 0.0), 1.0)).shrink(value, (), value)
