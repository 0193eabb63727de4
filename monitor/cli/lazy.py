"""Subcommands loaded when they run: `herowatch --help` and `herowatch emit` import only what they use.

A job script calls `herowatch emit` once a step and CI loops call `--help`; neither should pay for the
rule engine, SQLAlchemy, FastAPI or the W&B client. The top-level group knows each lazy subcommand by
name, the module attribute that holds it (a typer app or a command function) and the one line its
listing shows; the module is imported only when the subcommand is looked up to run (or for its own
``--help``). ``tests/test_cli_startup.py`` checks that each line is the command's own first paragraph
and that the light commands import none of the heavy packages.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

import typer
import typer.main
from typer.core import TyperCommand, TyperGroup


@dataclass(frozen=True)
class Lazy:
    name: str
    target: str  # "module:attribute": a typer.Typer (a group) or a command function
    summary: str  # what the top-level listing shows: the first paragraph of the command's help
    help: str | None = None  # a command function's help when it is not its docstring


def load(entry: Lazy) -> Any:
    """The click command of a lazy entry, its module imported now."""
    module, _, attribute = entry.target.partition(":")
    obj = getattr(importlib.import_module(module), attribute)
    if isinstance(obj, typer.Typer):  # a group stays a group, even with one command (`slack manifest`)
        command = typer.main.get_group(obj)
    else:  # a function: a one-command typer app becomes that command itself
        from monitor.cli.style import typer_app

        holder = typer_app(add_completion=False)
        holder.command(entry.name, help=entry.help)(obj)
        command = typer.main.get_command(holder)
    command.name = entry.name
    return command


class LazyGroup(TyperGroup):
    """A typer group whose `lazy` subcommands are imported when looked up, not when listed."""

    lazy: tuple[Lazy, ...] = ()  # set on a subclass: `LazyGroup.with_entries(...)`
    first: tuple[str, ...] = ()  # lazy names listed before the group's own commands, the rest after

    @classmethod
    def with_entries(cls, entries: tuple[Lazy, ...], first: tuple[str, ...]) -> type[LazyGroup]:
        return type("HerowatchGroup", (cls,), {"lazy": entries, "first": first})

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._listing = False  # True while the top-level help is written: summaries, no imports

    def list_commands(self, ctx: Any) -> list[str]:
        own = super().list_commands(ctx)
        before = [e.name for e in self.lazy if e.name in self.first]
        after = [e.name for e in self.lazy if e.name not in self.first]
        return before + own + after

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        found = super().get_command(ctx, cmd_name)
        if found is not None:
            return found
        entry = next((e for e in self.lazy if e.name == cmd_name), None)
        if entry is None:
            return None
        if self._listing:
            return TyperCommand(name=entry.name, help=entry.summary)
        command = load(entry)
        self.commands[cmd_name] = command
        return command

    def format_help(self, ctx: Any, formatter: Any) -> None:
        self._listing = True
        try:
            super().format_help(ctx, formatter)
        finally:
            self._listing = False
