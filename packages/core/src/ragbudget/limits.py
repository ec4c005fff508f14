"""Walls: the limits a client puts on one tool result, and the known clients' profiles.

A client stops reading a tool result at more than one wall: Claude Code refuses more than
25,000 tokens of it (`MAX_MCP_OUTPUT_TOKENS`) and, separately, saves any result over 50,000
characters to a file and shows the model a 2 KB preview; Codex keeps about 10,000 tokens;
Copilot CLI drops the middle past 10 KB. A budget is therefore a set of `Walls` checked on the
exact text a client gets: tokens by the counter in use, characters, and UTF-8 bytes.

`WalledCounter` makes every budgeted surface stop at whichever wall comes first without a new
argument anywhere: it counts a text in *budget units*, the largest of its tokens, its characters
times `tokens / chars` and its bytes times `tokens / bytes` (each rounded up), so a text fits all
the walls exactly when its units are at most `walls.tokens`. Units of parts add up to at least
the units of their characters and bytes together, so a sum of parts within the budget keeps the
joined text within every wall too. `WalledCounter.bound` says which wall binds.

`PROFILES` lists the walls of the clients people use, each with its source (docs/mcp.md has the
table); `profile_for(client_name)` picks one from the name a client sends at `initialize`,
`DEFAULT_PROFILE` for a client it does not know.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from datetime import date
from importlib import resources
from typing import Any, Literal

from ragbudget._checks import check_int
from ragbudget.counters import ScaledCounter, TokenCounter, count_up_to, stops_early
from ragbudget.text import counted

__all__ = [
    "CLAUDE_MAX_TOKENS_CEILING",
    "CUTS",
    "DEFAULT_MAX_TOKENS_CEILING",
    "DEFAULT_PROFILE",
    "ESTIMATE_MARGINS",
    "FORWARDS",
    "PROFILES",
    "ClientProfile",
    "Cuts",
    "Forwards",
    "Measured",
    "Wall",
    "WalledCounter",
    "Walls",
    "profile_for",
    "profile_from",
    "profile_names",
    "profile_table",
    "utf16_length",
    "with_estimate_margin",
]

Wall = Literal["tokens", "chars", "bytes"]
"""The name of one wall."""

CLAUDE_MAX_TOKENS_CEILING = 25_000
"""Claude Code warns at 10,000 tokens of MCP tool output and refuses more than 25,000 by
default (`MAX_MCP_OUTPUT_TOKENS`): the ceiling when budgets are counted in Claude tokens (the
`claude` counter preset)."""

DEFAULT_MAX_TOKENS_CEILING = 14_500
"""The ceiling in cl100k/o200k-like tokens (any other counter): Claude Code's 25,000 over
~1.7, the largest published inflation of Claude's tokenizers over o200k, so an answer at the
ceiling stays under Claude Code's default limit whatever the model."""


ESTIMATE_MARGINS = {"text": 0.10, "json": 0.15}
"""How much more an inexact counter (an estimate) counts, by what is counted: above the
estimate's largest measured under-count on rendered answers (`benchmarks/bench_answers.py`: 3%
on text, 11% on JSON, whose escaping the estimate counts short), so that what is sent stays
within a token wall by the real tokenizer. A margin m covers an under-count u while
1 / (1 - u) <= 1 + m. The server's `server_counter` and the middleware use these."""


def with_estimate_margin(counter: TokenCounter, format: str = "json") -> TokenCounter:
    """`counter` itself when exact, else with the estimate's margin for `format` on top, named
    so (`estimate+15%`)."""
    if counter.exact:
        return counter
    margin = ESTIMATE_MARGINS[format]
    return ScaledCounter(counter, 1 + margin, f"{counter.name}+{margin:.0%}")


def utf16_length(text: str) -> int:
    """`text`'s length as JavaScript counts it: UTF-16 code units (`len` plus one for each
    character past U+FFFF)."""
    if text.isascii():
        return len(text)
    return len(text) + sum(1 for ch in text if ord(ch) > 0xFFFF)


@dataclass(frozen=True)
class Measured:
    """One text's size against each wall."""

    tokens: int
    """By the counter in use."""
    chars: int
    """Characters as JavaScript counts them (`string.length`: UTF-16 code units, so a
    character outside the Basic Multilingual Plane, an emoji, counts two): what the clients
    written in TypeScript measure. Equal to `len` for text without such characters, and never
    less, so a character wall holds for a client counting code points too."""
    bytes: int
    """UTF-8 bytes."""


@dataclass(frozen=True)
class Walls:
    """The limits one answer must stay within, all checked on the exact text a client gets.

    Key init args:
        tokens: the most tokens, by the counter the budget is counted with (>= 0).
        chars: the most characters (UTF-16 code units, as JavaScript counts), or None for no
            such wall (>= 1).
        bytes: the most UTF-8 bytes, or None for no such wall (>= 1).

    Use:
        ```python
        from ragbudget import fit, get_counter
        from ragbudget.limits import WalledCounter, Walls

        walls = Walls(tokens=25_000, chars=50_000)
        counter = WalledCounter(get_counter(), walls)
        result = fit(chunks, walls.tokens, counter=counter)  # within both walls
        ```
    """

    tokens: int
    chars: int | None = None
    bytes: int | None = None

    def __post_init__(self) -> None:
        check_int("tokens", self.tokens, minimum=0)
        if self.chars is not None:
            check_int("chars", self.chars, minimum=1)
        if self.bytes is not None:
            check_int("bytes", self.bytes, minimum=1)

    def crossed(self, size: Measured) -> Wall | None:
        """The first wall `size` is over (tokens, then characters, then bytes), or None."""
        if size.tokens > self.tokens:
            return "tokens"
        if self.chars is not None and size.chars > self.chars:
            return "chars"
        if self.bytes is not None and size.bytes > self.bytes:
            return "bytes"
        return None

    def with_tokens(self, tokens: int) -> Walls:
        """The same character and byte walls with another token budget."""
        return Walls(tokens, self.chars, self.bytes)

    def tightest(self, other: Walls) -> Walls:
        """Each wall at the lower of the two (None: no wall)."""

        def low(a: int | None, b: int | None) -> int | None:
            return b if a is None else a if b is None else min(a, b)

        return Walls(
            min(self.tokens, other.tokens),
            low(self.chars, other.chars),
            low(self.bytes, other.bytes),
        )

    def describe(self) -> str:
        """`25,000 tokens, 50,000 characters`: the walls in words."""
        parts = [counted(self.tokens, "token")]
        if self.chars is not None:
            parts.append(counted(self.chars, "character"))
        if self.bytes is not None:
            parts.append(counted(self.bytes, "byte"))
        return ", ".join(parts)


class WalledCounter:
    """Counts a text in budget units against `walls`: a text fits every wall exactly when
    `count(text) <= walls.tokens`, so any surface that takes a counter and a `max_tokens`
    (`fit`, `cut_text`, `largest_prefix`, truncation, the store, the middleware) stops at
    whichever wall comes first when given this counter and `walls.tokens`.

    A character costs `walls.tokens / walls.chars` units and a byte `walls.tokens / walls.bytes`;
    a text's units are the largest of its tokens and those, each rounded up. Reported counts
    are therefore units, at least the tokens; `measure` gives each size on its own and `bound`
    which wall binds.
    """

    def __init__(self, inner: TokenCounter, walls: Walls) -> None:
        if not isinstance(walls, Walls):
            msg = f"walls must be a Walls, got {type(walls).__name__}"
            raise TypeError(msg)
        self.inner, self.walls = inner, walls
        self.name = inner.name
        self.exact = inner.exact and walls.chars is None and walls.bytes is None

    def count(self, text: str) -> int:
        return self._units(text, self.inner.count(text))

    @property
    def stops_early(self) -> bool:
        return stops_early(self.inner)

    def count_up_to(self, text: str, limit: int) -> int:
        """As `count`, but the tokens are counted only up to `limit` (`counters.count_up_to`),
        and not at all when the characters or bytes are already over it."""
        units = self._units(text, 0)
        if units > limit:
            return units
        return max(units, count_up_to(self.inner, text, limit))

    def units_of(self, text: str, tokens: int) -> int:
        """`text`'s budget units when its tokens (by `inner`) are known to be `tokens`."""
        return self._units(text, tokens)

    def _units(self, text: str, tokens: int) -> int:
        walls, units = self.walls, tokens
        if walls.chars is not None:
            units = max(units, math.ceil(utf16_length(text) * walls.tokens / walls.chars))
        if walls.bytes is not None:
            size = len(text.encode("utf-8", "surrogatepass"))
            units = max(units, math.ceil(size * walls.tokens / walls.bytes))
        return units

    def measure(self, text: str) -> Measured:
        """`text`'s tokens (by the inner counter), characters and UTF-8 bytes."""
        return Measured(
            self.inner.count(text), utf16_length(text), len(text.encode("utf-8", "surrogatepass"))
        )

    def bound(self, *texts: str) -> Wall:
        """Which wall `texts` sent together come nearest (the one a cut of them stopped at);
        their tokens are added up part by part, so parts already counted are not read again."""
        tokens = sum(self.inner.count(text) for text in texts)
        size = Measured(
            tokens,
            sum(map(utf16_length, texts)),
            sum(len(text.encode("utf-8", "surrogatepass")) for text in texts),
        )
        walls = self.walls
        shares: list[tuple[float, Wall]] = [(size.tokens / max(walls.tokens, 1), "tokens")]
        if walls.chars is not None:
            shares.append((size.chars / walls.chars, "chars"))
        if walls.bytes is not None:
            shares.append((size.bytes / walls.bytes, "bytes"))
        return max(shares, key=lambda share: share[0])[1]

    def __repr__(self) -> str:
        return f"WalledCounter({self.inner!r}, {self.walls!r})"


Forwards = Literal["text", "structured", "both", "unknown"]
"""Which field of a tool result a client gives its model: the text blocks, the JSON of the
structured content alone (the text dropped) when there is any, both, or not known."""
Cuts = Literal["refuses", "file", "middle", "head-tail", "head", "unknown"]
"""What a client does to a result past its wall."""
FORWARDS: tuple[str, ...] = ("text", "structured", "both", "unknown")
CUTS: tuple[str, ...] = ("refuses", "file", "middle", "head-tail", "head", "unknown")


@dataclass(frozen=True)
class ClientProfile:
    """The walls of one MCP client, as documented by its makers or read from its source.

    `tokens` is in cl100k/o200k-like tokens (any counter but the `claude` preset), with the
    margin for Claude's heavier tokenizers where the client counts in Claude tokens;
    `claude_tokens`, where set, is the same wall in Claude tokens (the `claude` preset).
    Each wall sits a little under the client's own, so that an answer at the wall never
    reaches it, whatever the client adds around the blocks it joins. The known profiles are
    read from `clients.json` in this package (`PROFILES`).
    """

    name: str
    """The profile's name, as `--client` and `stats` spell it."""
    title: str
    """The client, as its users know it."""
    clients: tuple[str, ...]
    """Prefixes of the `clientInfo.name` the client sends at initialize, lowercase, with
    spaces and underscores as `-` (`Visual Studio Code` is matched as `visual-studio-code`)."""
    tokens: int
    chars: int | None
    bytes: int | None
    source: str
    """Where the walls and the forwarding rule are documented (or how they were observed)."""
    claude_tokens: int | None = None
    sends: str | None = None
    """The `clientInfo.name` the client is known to send (tests and benchmarks use it)."""
    tokenizer: str | None = None
    """The counter spec of the tokens the client's models read (`tiktoken:o200k_base` for
    OpenAI's), when one is known; a server may count with it where it is available offline."""
    forwards: Forwards = "unknown"
    """Which field of a result the client gives its model (`FORWARDS`)."""
    cuts: Cuts = "unknown"
    """What the client does past its wall (`CUTS`), `cut` in words."""
    cut: str = ""
    links: tuple[str, ...] = ()
    """The source's addresses."""
    checked: str = ""
    """The date (ISO) the source was last checked."""

    def walls(self, counter: TokenCounter | None = None) -> Walls:
        """The walls in `counter`'s tokens (Claude tokens for the `claude` preset, alone or
        under the estimate's margin)."""
        tokens = self.tokens
        if self.claude_tokens is not None and _counts_claude(counter):
            tokens = self.claude_tokens
        return Walls(tokens, self.chars, self.bytes)


def _counts_claude(counter: TokenCounter | None) -> bool:
    """Whether `counter` is the `claude` preset, alone or under a margin (`claude+10%`)."""
    while counter is not None:
        if counter.name == "claude":
            return True
        counter = counter.base if isinstance(counter, ScaledCounter) else None
    return False


_FIELDS: dict[str, type | tuple[type, ...]] = {
    "name": str,
    "title": str,
    "sends": (str, type(None)),
    "clients": list,
    "tokens": int,
    "claude_tokens": (int, type(None)),
    "chars": (int, type(None)),
    "bytes": (int, type(None)),
    "tokenizer": (str, type(None)),
    "forwards": str,
    "cuts": str,
    "cut": str,
    "source": str,
    "links": list,
    "checked": str,
}


def profile_from(row: dict[str, Any]) -> ClientProfile:
    """One row of `clients.json` as a `ClientProfile`; a `ValueError` naming the profile and
    the field for a row that lacks a field (a source, the date it was checked, ...) or holds
    a wrong value."""
    name = row.get("name") if isinstance(row, dict) else None
    where = f"client profile {name!r}" if isinstance(name, str) else "a client profile"
    if not isinstance(row, dict):
        msg = f"{where} must be a JSON object, got {type(row).__name__}"
        raise ValueError(msg)
    missing = [field for field in _FIELDS if field not in row]
    unknown = sorted(set(row) - set(_FIELDS))
    if missing or unknown:
        msg = f"{where}: missing fields {missing}, unknown fields {unknown}"
        raise ValueError(msg)
    for field, kind in _FIELDS.items():
        value = row[field]
        if not isinstance(value, kind) or isinstance(value, bool):
            msg = f"{where}: {field} must be {kind}, got {value!r}"
            raise ValueError(msg)
    for field in ("clients", "links"):
        if not all(isinstance(item, str) and item for item in row[field]):
            msg = f"{where}: {field} must be a list of strings, got {row[field]!r}"
            raise ValueError(msg)
    for field in ("source", "checked", "cut", "title"):
        if not row[field].strip():
            msg = f"{where}: {field} must say something (every row names its source and date)"
            raise ValueError(msg)
    try:
        date.fromisoformat(row["checked"])
    except ValueError:
        msg = f"{where}: checked must be an ISO date, got {row['checked']!r}"
        raise ValueError(msg) from None
    if row["forwards"] not in FORWARDS:
        msg = f"{where}: forwards must be one of {', '.join(FORWARDS)}, got {row['forwards']!r}"
        raise ValueError(msg)
    if row["cuts"] not in CUTS:
        msg = f"{where}: cuts must be one of {', '.join(CUTS)}, got {row['cuts']!r}"
        raise ValueError(msg)
    for field in ("tokens", "claude_tokens", "chars", "bytes"):
        if row[field] is not None and row[field] < 1:
            msg = f"{where}: {field} must be at least 1, got {row[field]!r}"
            raise ValueError(msg)
    # The row's fields are the profile's (`_FIELDS`, checked above); lists become tuples.
    return ClientProfile(**{**row, "clients": tuple(row["clients"]), "links": tuple(row["links"])})


def _load() -> tuple[tuple[ClientProfile, ...], ClientProfile]:
    data = json.loads(resources.files("ragbudget").joinpath("clients.json").read_text("utf-8"))
    return tuple(profile_from(row) for row in data["profiles"]), profile_from(data["default"])


PROFILES, DEFAULT_PROFILE = _load()
"""The known clients' profiles, and the one for a client no profile names (or one that sends
no name): read from `clients.json` (docs/mcp.md has the table, written from it)."""

CLAUDE_CODE_CHARS = 48_000
"""Claude Code saves a tool result over 50,000 characters to a file and shows the model a
2 KB preview; 2,000 characters under it for what a client adds between blocks."""


def profile_table() -> str:
    """The profiles as the Markdown table docs/mcp.md holds (tools/client_table.py)."""
    rows = [
        "| profile | client | `clientInfo.name` | walls | model reads | past the wall | source "
        "(checked) |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    reads = {
        "text": "text blocks",
        "structured": "structured content alone",
        "both": "both",
        "unknown": "not documented",
    }
    for profile in (*PROFILES, DEFAULT_PROFILE):
        links = ", ".join(f"<{link}>" for link in profile.links)
        source = f"{profile.source}{'; ' + links if links else ''} ({profile.checked})"
        sends = f"`{profile.sends}`" if profile.sends else "anything else"
        cells = [
            f"`{profile.name}`",
            profile.title,
            sends,
            profile.walls().describe() + _claude_note(profile),
            reads[profile.forwards],
            profile.cut,
            source,
        ]
        rows.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    return "\n".join(rows) + "\n"


def _claude_note(profile: ClientProfile) -> str:
    if profile.claude_tokens is None:
        return ""
    return f" ({profile.claude_tokens:,} tokens with `--counter claude`)"


def profile_names() -> tuple[str, ...]:
    """Every profile's name, the default last: what `--client` takes."""
    return (*(p.name for p in PROFILES), DEFAULT_PROFILE.name)


def _normal(name: str) -> str:
    return "-".join(name.strip().lower().replace("_", " ").split())


def profile_for(client_name: str | None, override: str | None = None) -> ClientProfile:
    """The profile named `override` if given, else the one whose `clients` prefix the client's
    `clientInfo.name` starts with (case, spaces and underscores aside), else
    `DEFAULT_PROFILE`."""
    if override is not None:
        for profile in (*PROFILES, DEFAULT_PROFILE):
            if profile.name == override:
                return profile
        msg = f"client profile must be one of {', '.join(profile_names())}, got {override!r}"
        raise ValueError(msg)
    name = _normal(client_name or "")
    for profile in PROFILES:
        if name and any(name.startswith(prefix) for prefix in profile.clients):
            return profile
    return DEFAULT_PROFILE
