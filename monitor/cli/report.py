"""`herowatch report`: the hero-run report of a period, as Markdown, self-contained HTML or JSON."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import typer

from monitor.config.errors import ConfigError

FORMATS = ("md", "html", "json")


def _fail(message: str, code: int = 2) -> typer.Exit:
    typer.secho(message, err=True, fg=typer.colors.RED)
    return typer.Exit(code)


def report_command(
    since: str = typer.Option(None, "--since", help="the period up to now, e.g. 7d, 36h"),
    start: str = typer.Option(None, "--from", help="start date, e.g. 2026-11-23 or 2026-11-23T09:00"),
    end: str = typer.Option(None, "--to", help="end date (excluded) [default: now]"),
    watch: str = typer.Option(None, "--watch", "-w", help="only this watch's runs"),
    run: list[str] = typer.Option(None, "--run", "-r", help="only these runs (id or name; repeat)"),
    fmt: str = typer.Option("md", "--format", "-f", help="md (wiki, Slack), html (one file), json"),
    out: Path = typer.Option(None, "--out", "-o", help="write here instead of standard output"),
    timezone: str = typer.Option("UTC", "--timezone", "--tz", help="weeks start Monday 00:00 here"),
    config: Path = typer.Option(None, "--config", "-c", help="the watch config (its gpus: settings)"),
    database_url: str = typer.Option(None, "--database-url", help="[env HEROWATCH_DATABASE_URL]"),
) -> None:
    """Where the GPU-hours went, which incidents cost them, which rules cried wolf.

    By default the last full week (Monday 00:00 to Monday 00:00 in --timezone). GPU-hours use each
    watch's `gpus:` from --config, else the GPUs the run's fleet metrics list, else hours only
    (the report says which). docs/reports.md explains every figure.

    Examples:

        herowatch report                              # last week, Markdown
        herowatch report --since 7d -f html -o week.html
        herowatch report --from 2026-11-23 --to 2026-11-30 -w hero-70b -f json
    """
    from alerts.clock import SystemClock
    from monitor.cli.common import settings_or_exit as _settings
    from monitor.cli.loading import load as _load
    from monitor.database_setup import NoDatabase, SchemaNotReady, read_database
    from monitor.reports import period as periods
    from monitor.reports.make import make, render
    from monitor.storage.db import make_sessionmaker

    if fmt not in FORMATS:
        raise _fail(f"--format {fmt!r}: use one of {', '.join(FORMATS)}")
    cfg = None
    if config is not None:
        try:
            cfg, _ = _load(config)
        except ConfigError as exc:
            raise _fail(exc.render()) from None
        if watch is not None and watch not in {w.name for w in cfg.watch}:
            raise _fail(f"{config}: no watch named {watch!r}")
    now = SystemClock().time()
    try:
        tz = periods.zone(timezone)
        p = periods.choose(now, tz, since=since, start=start, end=end)
    except periods.PeriodError as exc:
        raise _fail(str(exc)) from None
    settings = _settings(database_url)
    explicit = database_url is not None or bool(os.environ.get("HEROWATCH_DATABASE_URL"))
    try:  # read-only: never creates or migrates a database
        db, note = read_database(settings, explicit)
    except (NoDatabase, SchemaNotReady) as exc:
        raise _fail(str(exc)) from None
    if note:
        typer.echo(note, err=True)
    try:
        with make_sessionmaker(db)() as s:
            report = make(s, cfg, p, now=now, tz=tz.key, watch=watch, runs=list(run or ()))
            text = render(s, report, fmt)  # type: ignore[arg-type]
    finally:
        db.dispose()
    if out is None:
        sys.stdout.write(text)
    else:
        out.write_text(text, encoding="utf-8")
        typer.echo(f"{out}: the report of {report.period.label} ({len(report.runs)} runs)", err=True)
