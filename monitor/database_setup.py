"""The database a service runs on: the embedded SQLite default (one process: a lock file beside it)
or a shared PostgreSQL at the current schema."""

from __future__ import annotations

import fcntl
import os

from sqlalchemy import Engine as DbEngine
from sqlalchemy.engine import make_url

from monitor.settings import Settings
from monitor.storage import migrate
from monitor.storage.db import is_sqlite, make_engine, normalise_url


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
