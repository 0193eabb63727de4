"""`herowatch record` and `herowatch backfill`: what the sources hold, into a trace file or the database,
with no rule run and nobody paged."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from monitor.cli.common import fail, settings_or_exit, setup_logging
from monitor.config.errors import ConfigError


def record_command(
    config: Path = typer.Option(..., "--config", "-c", help="the watch config file (YAML)"),
    out: Path = typer.Option(
        ..., "--out", "-o", help="trace file to write (JSON Lines, docs/trace-format.md)"
    ),
    duration: str = typer.Option(
        None, "--duration", "-d", help="stop after this long, e.g. 90s, 2h [default: until Ctrl-C]"
    ),
    append: bool = typer.Option(False, help="append to --out instead of replacing it"),
) -> None:
    """Record what the pollers read into a trace, for `herowatch replay` and for rule tests.

    No rules run and nothing is stored in the database. Ctrl-C stops cleanly: everything read so far
    is in the file.
    """
    import time

    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    from alerts.clock import SystemClock
    from monitor.durations import parse_duration
    from monitor.sources.registry import make_source
    from monitor.traces.recorder import Recorder
    from monitor.traces.recorder import record as run_record
    from monitor.traces.trace import TraceWriter

    setup_logging("WARNING")
    try:
        seconds = parse_duration(duration) if duration else None
    except ValueError as exc:
        raise fail(f"--duration: {exc}") from None
    try:
        cfg, _ = _load(config)
    except ConfigError as exc:
        raise fail(exc.render()) from None
    settings = settings_or_exit()
    sources = {k: make_source(k, settings) for k in sorted({k for w in cfg.watch for k in w.targets()})}
    with TraceWriter(out, append=append) as writer:
        rec = Recorder(cfg.watch, sources, writer, SystemClock())
        columns = [TextColumn("recording {task.fields[n]} samples"), BarColumn(), TimeElapsedColumn()]
        with Progress(*columns, transient=True, disable=not sys.stderr.isatty()) as bar:
            task = bar.add_task("record", total=seconds, n=0)
            try:
                n = run_record(
                    rec,
                    seconds,
                    time.sleep,
                    lambda elapsed, count: bar.update(task, completed=elapsed, n=count),
                )
            except KeyboardInterrupt:
                n = writer.count
    for src in sources.values():
        src.close()
    typer.echo(f"wrote {n} samples to {out}" + (f" ({rec.late} arrived late)" if rec.late else ""))


def backfill_command(
    config: Path = typer.Option(..., "--config", "-c", help="the watch config file (YAML)"),
    watch: str = typer.Option(..., "--watch", "-w", help="the watch entry whose runs to load"),
    run: list[str] = typer.Option(
        None, "--run", "-r", help="only these run ids [default: every run the watch selects]"
    ),
    out: Path = typer.Option(None, "--out", "-o", help="also write the samples to this trace file"),
    database_url: str = typer.Option(None, "--database-url", help="[env HEROWATCH_DATABASE_URL]"),
) -> None:
    """Load runs' whole history (e.g. a finished run) into the database, for the dashboard and goodput.

    No rule runs and nothing is notified: events of the past page nobody today. A later
    `herowatch serve` continues from where the backfill stopped.
    """
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    from alerts.clock import SystemClock
    from monitor.service import SchemaNotReady, prepare_database
    from monitor.sources.registry import make_source
    from monitor.storage.db import make_sessionmaker
    from monitor.traces.backfill import backfill as run_backfill
    from monitor.traces.trace import TraceWriter

    setup_logging("WARNING")
    try:
        cfg, _ = _load(config)
    except ConfigError as exc:
        raise fail(exc.render()) from None
    chosen = next((w for w in cfg.watch if w.name == watch), None)
    if chosen is None:
        raise fail(f"{config}: no watch named {watch!r}; known: {', '.join(w.name for w in cfg.watch)}")
    settings = settings_or_exit(database_url)
    try:
        db = prepare_database(settings)
    except SchemaNotReady as exc:
        raise fail(str(exc)) from None
    sources = {k: make_source(k, settings) for k in chosen.targets()}
    writer = TraceWriter(out) if out else None
    columns = [TextColumn("backfill {task.fields[run]}"), BarColumn(), MofNCompleteColumn()]
    try:
        with Progress(*columns, transient=True, disable=not sys.stderr.isatty()) as bar:
            task = bar.add_task("backfill", total=None, run="")
            report = run_backfill(
                chosen,
                sources,
                make_sessionmaker(db),
                SystemClock(),
                run or (),
                writer,
                lambda r, done, total: bar.update(task, completed=done, total=total, run=r),
            )
    except RuntimeError as exc:
        raise fail(f"cannot list the runs of {watch}: {exc}", 1) from None
    finally:
        if writer:
            writer.close()
        for src in sources.values():
            src.close()
        db.dispose()
    for r, n in report.runs.items():
        typer.echo(f"{r}: {n} samples loaded")
    for r, e in report.errors.items():
        typer.secho(f"{r}: failed: {e}", err=True, fg=typer.colors.RED)
    if report.errors:
        raise typer.Exit(1)


def _load(config: Path):  # noqa: ANN202
    from monitor.cli.loading import load  # lazy: the rules and sources stay out of a plain --help

    return load(config)
