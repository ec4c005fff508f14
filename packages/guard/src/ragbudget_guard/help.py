"""Help without a type beside flags: `--watch`, not `--watch <bool>`.

Typer 0.29 prints each option's type in its help, flags included (its own `--help` too), which
reads as if a flag took a value (`--version <bool>`). The `ragbudget` and `ragbudget-guard`
commands use these classes so a flag shows its name and its help alone; options that take a
value keep their type.
"""

from __future__ import annotations

from typing import Any

from typer.core import TyperCommand, TyperGroup

__all__ = ["PlainFlagsCommand", "PlainFlagsGroup"]


def _plain(params: list[Any]) -> list[Any]:
    for param in params:
        if getattr(param, "is_flag", False) and param.metavar is None:
            param.metavar = ""  # typer shows the metavar, when set, instead of the type
    return params


class PlainFlagsCommand(TyperCommand):
    """A command whose help shows no type beside its flags."""

    def get_params(self, ctx: Any) -> list[Any]:
        return _plain(super().get_params(ctx))


class PlainFlagsGroup(TyperGroup):
    """A group whose help, and each of its commands' help, shows no type beside flags."""

    def get_params(self, ctx: Any) -> list[Any]:
        return _plain(super().get_params(ctx))

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        command = super().get_command(ctx, cmd_name)
        if type(command) is TyperCommand:  # typer builds each command as a plain TyperCommand
            command.__class__ = PlainFlagsCommand
        return command
