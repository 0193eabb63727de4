"""The database a service runs on: the embedded SQLite default (one process: a lock file beside it)
or a shared PostgreSQL at the current schema."""

from __future__ import annotations

import fcntl
import os

from sqlalchemy import Engine as DbEngine
from sqlalchemy.engine import make_url

from monitor.settings import Settings, data_dir, redact_url
from monitor.storage import migrate
from monitor.storage.db import is_sqlite, make_engine, make_read_only_engine, normalise_url


class SchemaNotReady(RuntimeError):
    pass


def lock_sqlite(database_url: str) -> int | None:
    """Take the exclusive lock beside an SQLite database file (``<file>.lock``, holding our pid), or raise
    :class:`DatabaseInUse` naming the holder. None for other databases. The lock lasts until the
    returned descriptor is closed (or the process ends)."""
    if not is_sqlite(database_url):
        return None
    path = make_url(normalise_url(database_url)).database
    if not path or path == ":memory:":
        return None
    fd = os.open(f"{path}.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "another process"
        os.close(fd)
        raise DatabaseInUse(
            f"another herowatch ({holder}) is using the SQLite database {path}. SQLite is "
            "single-process: stop it, or run several replicas on PostgreSQL (HEROWATCH_DATABASE_URL)"
        ) from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"pid {os.getpid()}".encode(), 0)
    return fd


class DatabaseInUse(RuntimeError):
    pass


class NoDatabase(RuntimeError):
    pass


def read_database(settings: Settings, explicit: bool) -> tuple[DbEngine, str | None]:
    """The database a read-only command (``report``, ...) reads, opened so that it can neither create
    nor change it, and a note when it is not the one asked for. ``explicit``: the URL was given
    (``--database-url`` or ``HEROWATCH_DATABASE_URL``). Without one, the server's default SQLite file;
    when that does not exist but the demo's does (``make demo``), the demo's. Raises
    :class:`NoDatabase` (nothing there: nothing is created) or :class:`SchemaNotReady`."""
    url, note = settings.database_url, None
    if is_sqlite(url):
        path = make_url(normalise_url(url)).database or ""
        demo = data_dir() / "demo.db"
        if path and path != ":memory:" and not os.path.exists(os.path.expanduser(path)):
            if explicit or not demo.is_file():
                raise NoDatabase(
                    f"no database at {path}: `herowatch serve` (or `make demo`) creates it; "
                    "or give the server's with --database-url / HEROWATCH_DATABASE_URL"
                )
            url, note = f"sqlite:///{demo}", f"reading the demo's database {demo} (no {path} yet)"
    db = make_read_only_engine(url)
    try:
        current = migrate.is_up_to_date(db)
    except Exception as exc:  # noqa: BLE001 - not a herowatch database, or not readable
        db.dispose()
        raise NoDatabase(f"cannot read the database {redact_url(url)}: {type(exc).__name__}: {exc}") from None
    if not current:
        db.dispose()
        raise SchemaNotReady(
            f"the database {redact_url(url)} is not at the current schema (head {migrate.head_revision()}); "
            "run `herowatch db upgrade` first (this command only reads)"
        )
    return db, note


def prepare_database(settings: Settings, auto_migrate: bool | None = None) -> DbEngine:
    """An engine on a database at the current schema. The embedded SQLite default migrates itself;
    a shared database (PostgreSQL) is migrated explicitly with ``herowatch db upgrade``."""
    url = settings.database_url
    if auto_migrate is None:
        auto_migrate = is_sqlite(url)
    if auto_migrate:
        migrate.upgrade(url)
    db = make_engine(url)
    if not migrate.is_up_to_date(db):
        db.dispose()
        raise SchemaNotReady(
            f"the database {settings.redacted_database_url()} is not at the current schema "
            f"(head {migrate.head_revision()}); run `herowatch db upgrade` first"
        )
    return db
