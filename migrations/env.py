"""Alembic environment for herowatch: one script for SQLite and PostgreSQL (batch mode)."""

from __future__ import annotations

from alembic import context
from sqlalchemy import text

from monitor.storage.db import is_sqlite, make_engine
from monitor.storage.models import Base

config = context.config
target_metadata = Base.metadata


def run_migrations_offline() -> None:
    context.configure(
        url=config.get_main_option("sqlalchemy.url"),
        target_metadata=target_metadata,
        literal_binds=True,
        render_as_batch=True,
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    url = config.get_main_option("sqlalchemy.url")
    # Foreign keys off on SQLite: a batch migration recreates tables, and ON DELETE CASCADE would
    # otherwise delete child rows. The pragma only takes effect outside a transaction.
    engine = make_engine(url, foreign_keys=False)
    with engine.connect() as connection:
        if is_sqlite(url):
            connection.execute(text("PRAGMA foreign_keys=OFF"))
            connection.commit()
        context.configure(
            connection=connection, target_metadata=target_metadata, render_as_batch=True, compare_type=True
        )
        with context.begin_transaction():
            context.run_migrations()
    engine.dispose()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
