"""The database connection: one engine per process, SQLite tuned for a single writer process."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session, sessionmaker


def is_sqlite(url: str) -> bool:
    return make_url(url).get_backend_name() == "sqlite"


def normalise_url(url: str) -> str:
    """``postgresql://`` means psycopg 3 here (the driver herowatch ships with)."""
    u = make_url(url)
    if u.drivername in ("postgresql", "postgres"):
        u = u.set(drivername="postgresql+psycopg")
    return u.render_as_string(hide_password=False)


def make_engine(url: str, *, foreign_keys: bool = True) -> Engine:
    url = normalise_url(url)
    if is_sqlite(url):
        path = make_url(url).database
        if path and path != ":memory:":
            Path(path).expanduser().parent.mkdir(parents=True, exist_ok=True)
        # A small pool: opening an SQLite connection (and its pragmas) per session costs more than a poll.
        engine = create_engine(
            url, connect_args={"check_same_thread": False, "timeout": 30}, pool_size=8, max_overflow=8
        )

        @event.listens_for(engine, "connect")
        def _pragmas(dbapi_conn, _record):  # noqa: ANN001
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA busy_timeout=30000")
            cur.execute("PRAGMA synchronous=NORMAL")
            cur.execute(f"PRAGMA foreign_keys={'ON' if foreign_keys else 'OFF'}")
            cur.close()

        return engine
    # Poll threads (the scheduler's), the batch writer, the health job, the outbox and the API share it.
    return create_engine(url, pool_pre_ping=True, pool_size=10, max_overflow=10)


def make_read_only_engine(url: str) -> Engine:
    """An engine that cannot create or change the database: SQLite opened with ``mode=ro`` (a missing
    file is an error, not a new empty database; no pragma is set); others as they are (a read-only
    command only reads)."""
    url = normalise_url(url)
    if not is_sqlite(url):
        return create_engine(url, pool_pre_ping=True, pool_size=2, max_overflow=2)
    path = make_url(url).database or ""
    uri = f"sqlite:///file:{Path(path).expanduser()}?mode=ro&uri=true"
    return create_engine(uri, connect_args={"check_same_thread": False, "timeout": 30})


def make_sessionmaker(engine: Engine) -> sessionmaker[Session]:
    return sessionmaker(engine, expire_on_commit=False)
