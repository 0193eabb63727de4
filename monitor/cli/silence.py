"""`herowatch silence add|list|expire`: mute alerts by label matchers, as with Alertmanager's amtool."""

from __future__ import annotations

import getpass

import typer

from alerts.clock import SystemClock, isoformat
from monitor.durations import format_duration, parse_duration

silence_app = typer.Typer(
    help="Silence alerts by label matchers. A silenced alert is still recorded and shown on the "
    "dashboard, but not sent.\n\nExamples:\n\n  herowatch silence add run=hero-70b --duration 2h "
    "--comment 'node swap'\n\n  herowatch silence add 'alertname=~\"progress_.*\"' cluster=a3 -d 30m\n\n"
    "  herowatch silence list\n\n  herowatch silence expire 3",
    no_args_is_help=True,
)


def _sessions(database_url: str | None):  # noqa: ANN202
    from monitor.cli.main import _settings
    from monitor.service import SchemaNotReady, prepare_database
    from monitor.storage.db import make_sessionmaker

    settings = _settings(database_url)
    try:
        db = prepare_database(settings)
    except SchemaNotReady as exc:
        raise typer.Exit(_err(str(exc))) from None
    return db, make_sessionmaker(db)


def _err(message: str) -> int:
    typer.secho(message, err=True, fg=typer.colors.RED)
    return 2


DB_OPTION = typer.Option(None, "--database-url", help="[env HEROWATCH_DATABASE_URL]")


@silence_app.command("add")
def add(
    matchers: list[str] = typer.Argument(
        ..., help="label matchers: name=value, name!=value, name=~regex, name!~regex (all must match)"
    ),
    duration: str = typer.Option("1h", "--duration", "-d", help="how long, e.g. 30m, 2h, 1d"),
    comment: str = typer.Option("", "--comment", "-c", help="why: shown next to the silenced alerts"),
    by: str = typer.Option(None, "--by", help="who creates it [default: your user name]"),
    database_url: str = DB_OPTION,
) -> None:
    """Create a silence starting now."""
    from monitor.delivery import oncall

    try:
        seconds = parse_duration(duration)
    except ValueError as exc:
        raise typer.Exit(_err(f"--duration: {exc}")) from None
    db, sessions = _sessions(database_url)
    now = SystemClock().time()
    try:
        with sessions.begin() as s:
            row = oncall.create_silence(
                s, matchers, created_by=by or getpass.getuser(), comment=comment, now=now, duration=seconds
            )
            sid = row.id
    except oncall.ActionError as exc:
        raise typer.Exit(_err(exc.message)) from None
    finally:
        db.dispose()
    typer.echo(f"silence {sid} active until {isoformat(now + seconds)} ({format_duration(seconds)})")


@silence_app.command("list")
def list_(
    all_: bool = typer.Option(False, "--all", help="include expired silences"),
    database_url: str = DB_OPTION,
) -> None:
    """Show active (and with --all, expired) silences."""
    from monitor.storage import views

    db, sessions = _sessions(database_url)
    now = SystemClock().time()
    with sessions() as s:
        rows = [r for r in views.list_silences(s, now) if all_ or r.ends_at > now]
        if not rows:
            typer.echo("no silences" if all_ else "no active silences")
        for r in rows:
            typer.echo(
                f"{r.id:>4}  {views.silence_state(r, now):8}  until {isoformat(r.ends_at)}  "
                f"{' '.join(r.matchers.get('matchers', []))}  by {r.created_by}"
                + (f"  # {r.comment}" if r.comment else "")
            )
    db.dispose()


@silence_app.command("expire")
def expire(
    silence_id: int = typer.Argument(..., help="the silence's id (see `herowatch silence list`)"),
    database_url: str = DB_OPTION,
) -> None:
    """End a silence now."""
    from monitor.delivery import oncall

    db, sessions = _sessions(database_url)
    try:
        with sessions.begin() as s:
            oncall.expire_silence(s, silence_id, SystemClock().time())
    except oncall.ActionError as exc:
        raise typer.Exit(_err(exc.message)) from None
    finally:
        db.dispose()
    typer.echo(f"silence {silence_id} expired")
