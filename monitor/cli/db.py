"""`herowatch db upgrade|downgrade|current`: the database schema (Alembic)."""

from __future__ import annotations

import typer

from monitor.cli.style import typer_app

db_app = typer_app(
    help="Database schema: upgrade, downgrade, show the current revision.", no_args_is_help=True
)


def _settings(database_url: str | None):  # noqa: ANN202
    from monitor.cli.common import settings_or_exit as settings_of

    return settings_of(database_url)


def _fail(message: str, code: int) -> typer.Exit:
    typer.secho(message, err=True, fg=typer.colors.RED)
    return typer.Exit(code)


@db_app.command("upgrade")
def db_upgrade(
    revision: str = typer.Option("head", help="target revision"),
    database_url: str = typer.Option(None, "--database-url", help="[env HEROWATCH_DATABASE_URL]"),
) -> None:
    """Bring the database schema up to date (run before starting a new version on PostgreSQL)."""
    from monitor.storage import migrate

    settings = _settings(database_url)
    try:
        migrate.upgrade(settings.database_url, revision)
    except Exception as exc:
        raise _fail(f"upgrade of {settings.redacted_database_url()} failed: {exc}", 1) from None
    typer.echo(f"{settings.redacted_database_url()}: at revision {revision}")


@db_app.command("downgrade")
def db_downgrade(
    revision: str = typer.Argument(..., help="target revision, e.g. -1 or base"),
    database_url: str = typer.Option(None, "--database-url", help="[env HEROWATCH_DATABASE_URL]"),
) -> None:
    """Step the schema back (for rolling back a release)."""
    from monitor.storage import migrate

    settings = _settings(database_url)
    migrate.downgrade(settings.database_url, revision)
    typer.echo(f"{settings.redacted_database_url()}: downgraded to {revision}")


@db_app.command("current")
def db_current(
    database_url: str = typer.Option(None, "--database-url", help="[env HEROWATCH_DATABASE_URL]"),
) -> None:
    """Show the database's schema revision and the newest one this version knows."""
    from sqlalchemy.exc import OperationalError

    from monitor.storage import migrate
    from monitor.storage.db import make_read_only_engine

    settings = _settings(database_url)
    engine = make_read_only_engine(settings.database_url)  # it only looks: never creates a database
    try:
        typer.echo(f"current: {migrate.current_revision(engine)}  head: {migrate.head_revision()}")
    except OperationalError as exc:
        raise _fail(f"cannot read {settings.redacted_database_url()}: {exc.orig}", 2) from None
    finally:
        engine.dispose()
