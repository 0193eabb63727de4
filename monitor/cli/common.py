"""What every herowatch command shares: logging set-up, a red error and an exit code, the settings."""

from __future__ import annotations

import logging
import sys

import typer

from alerts.text import one_line

MAX_LOG_MESSAGE = 8000  # characters of one log message (a traceback follows it, as Python writes it)
FORMAT = "%(asctime)s %(levelname)-7s %(name)s: %(message)s"


class OneLine(logging.Formatter):
    """Every message on one line and bounded (``alerts.text.one_line``): a run directory named with a
    newline, or a 50 MB error from a source, cannot forge a log line or flood the log."""

    def formatMessage(self, record: logging.LogRecord) -> str:  # noqa: N802 - logging's name
        record.message = one_line(record.message, MAX_LOG_MESSAGE)
        return super().formatMessage(record)


def setup_logging(level: str) -> None:
    """herowatch's own stderr handler: one bounded line a message, floods written as counts. Handlers
    someone else put on the root logger first (an embedding program, a test runner) are left alone."""
    root = logging.getLogger()
    before = list(root.handlers)
    logging.basicConfig(level=getattr(logging, level.upper(), logging.INFO), stream=sys.stderr, format=FORMAT)
    ours = [h for h in root.handlers if h not in before]
    for handler in ours:
        handler.setFormatter(OneLine(FORMAT))
    for noisy in ("apscheduler", "httpx", "uvicorn.access"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    from monitor.cli.log_limits import RepeatLimit

    limit = RepeatLimit()  # a message repeated in a flood is written as a count
    for handler in ours:
        handler.addFilter(limit)


def fail(message: str, code: int = 2) -> typer.Exit:
    typer.secho(message, err=True, fg=typer.colors.RED)
    return typer.Exit(code)


def settings_or_exit(database_url: str | None = None, listen: str | None = None):  # noqa: ANN202
    from monitor.settings import load_settings

    try:
        return load_settings(database_url=database_url, listen=listen)
    except ValueError as exc:
        raise fail(str(exc)) from None
