"""How every herowatch command's --help reads, in one place.

- Help texts are Markdown: paragraphs reflow to the terminal, `code` stays literal, and text in square
  brackets (``[env HEROWATCH_LISTEN, default 127.0.0.1:8080]``) is shown, not eaten as Rich markup.
- A flag takes no value, so its line shows no type: typer 0.29 prints ``<bool>`` beside ``--help`` and
  every flag, which reads as if the flag wanted an argument. An argument's name says what it is, so
  its ``<list[str]>`` is dropped too; a repeatable option shows the type of one value.
"""

from __future__ import annotations

from typing import Any

import typer
from typer.core import TyperArgument, TyperOption

_option_type = TyperOption.display_type_rich


def _option_display_type(self: TyperOption, ctx: Any) -> str | None:
    if self.is_flag:
        return None
    shown = _option_type(self, ctx)
    if shown and shown.startswith("<list[") and shown.endswith("]>"):  # a repeatable option: one value each
        return "<" + shown[len("<list[") : -2] + ">"
    return shown


def _argument_display_type(self: TyperArgument, ctx: Any) -> str | None:
    return None


TyperOption.display_type_rich = _option_display_type  # type: ignore[method-assign]
TyperArgument.display_type_rich = _argument_display_type  # type: ignore[method-assign]


def typer_app(**settings: Any) -> typer.Typer:
    """A command group with herowatch's help style."""
    return typer.Typer(rich_markup_mode="markdown", **settings)
