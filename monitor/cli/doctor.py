"""``herowatch doctor``'s output: a progress line on stderr while it works, then the report (80 columns)
or ``--json``; returns the exit code (``monitor.doctor``)."""

from __future__ import annotations

import json
import logging
import shutil
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import typer

from monitor.config.schema import WatchConfig
from monitor.doctor.checks import check_all
from monitor.doctor.report import FAIL, UNCHECKED, WARN
from monitor.rules.loader import RuleSet
from monitor.settings import Settings

_STYLE = {FAIL: typer.colors.RED, WARN: typer.colors.YELLOW, UNCHECKED: typer.colors.MAGENTA}


def run_doctor(cfg: WatchConfig, rules: RuleSet, settings: Settings, as_json: bool) -> int:
    tty = sys.stderr.isatty()
    shown = [0]

    def progress(text: str) -> None:
        line = f"doctor: {text}"[:79]
        if tty:
            sys.stderr.write("\r" + line.ljust(shown[0]))
            shown[0] = len(line)
        else:
            sys.stderr.write(line + "\n")
        sys.stderr.flush()

    with _library_log() as logged:  # the libraries' own log lines would interleave the report
        report = check_all(cfg, rules, settings, progress)
    report.library_log = logged[-50:]
    if tty:
        sys.stderr.write("\r" + " " * shown[0] + "\r")
    if as_json:
        typer.echo(json.dumps(report.to_json(), indent=1))
        return report.exit_code
    width = min(80, shutil.get_terminal_size((80, 24)).columns)
    for item in report.items:
        for n, line in enumerate(report.item_lines(item, width)):
            typer.secho(line, fg=_STYLE.get(item.level) if n == 0 else None)
    typer.echo(report.verdict())
    return int(report.exit_code)


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.lines.append(f"{record.levelname} {record.name}: {record.getMessage()}")
        except Exception:  # noqa: BLE001 - a malformed log call must not break the report
            self.lines.append(f"{record.levelname} {record.name}: {record.msg!r}")


@contextmanager
def _library_log() -> Iterator[list[str]]:
    """Every log record of the run goes to a list (``--json``'s ``library_log``), none to the terminal."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    collect = _Collect()
    root.handlers = [collect]
    root.setLevel(logging.INFO)
    try:
        yield collect.lines
    finally:
        root.handlers, root.level = handlers, level
