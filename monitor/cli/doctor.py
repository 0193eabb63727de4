"""``herowatch doctor``'s output: a progress line on stderr while it works, then the report (80 columns)
or ``--json``; returns the exit code (``monitor.doctor``)."""

from __future__ import annotations

import json
import logging
import shutil
import sys

import typer

from monitor.config.schema import WatchConfig
from monitor.doctor.checks import check_all
from monitor.doctor.report import FAIL, WARN
from monitor.rules.loader import RuleSet
from monitor.settings import Settings

_STYLE = {FAIL: typer.colors.RED, WARN: typer.colors.YELLOW}


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

    logging.getLogger().setLevel(logging.ERROR)  # the sources' own logs would interleave the report
    report = check_all(cfg, rules, settings, progress)
    if tty:
        sys.stderr.write("\r" + " " * shown[0] + "\r")
    if as_json:
        typer.echo(json.dumps(report.to_json(), indent=1))
        return report.exit_code
    width = min(80, shutil.get_terminal_size((80, 24)).columns)
    for item_lines, item in zip(_grouped(report, width), report.items, strict=False):
        for n, line in enumerate(item_lines):
            typer.secho(line, fg=_STYLE.get(item.level) if n == 0 else None)
    typer.echo(report.lines(width)[-1])
    return report.exit_code


def _grouped(report, width: int) -> list[list[str]]:  # noqa: ANN001
    """The report's lines, one list per item."""
    from monitor.doctor.report import Report

    out = []
    for item in report.items:
        out.append(Report([item]).lines(width)[:-1])
    return out
