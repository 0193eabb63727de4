"""`herowatch rules ...` and `herowatch replay`: the rule engine's tools for users (placeholder)."""

from __future__ import annotations

import typer

rules_app = typer.Typer(
    help="Work with rule files: list the built-in packs, unit-test rules.", no_args_is_help=True
)
