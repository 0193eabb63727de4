"""What every herowatch command shares: logging set-up, a red error and an exit code, the settings."""

from __future__ import annotations

import logging
import sys

import typer


def setup_logging(level: str) -> None:
    logging.basicConfig(
        level=getattr(logging, level.upper(), logging.INFO),
        stream=sys.stderr,
        format="%(asctime)s %(levelname)-7s %(name)s: %(message)s",
    )
    for noisy in ("apscheduler", "httpx", "uvicorn.access"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    from monitor.cli.log_limits import limit_repeats

    limit_repeats()  # a message repeated in a flood is written as a count


def fail(message: str, code: int = 2) -> typer.Exit:
    typer.secho(message, err=True, fg=typer.colors.RED)
    return typer.Exit(code)


def settings_or_exit(database_url: str | None = None, listen: str | None = None):  # noqa: ANN202
    from monitor.settings import load_settings

    try:
        return load_settings(database_url=database_url, listen=listen)
    except ValueError as exc:
        raise fail(str(exc)) from None
