"""Multi-row upserts: ``INSERT ... ON CONFLICT (key) DO UPDATE`` for many rows in one statement
(executed as one batched executemany), on PostgreSQL and SQLite alike."""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence

from sqlalchemy import Table
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session


def upsert(
    session: Session, table: Table, rows: Sequence[dict], keys: Iterable[str], update: Iterable[str]
) -> None:
    """Insert ``rows`` into ``table``; a row whose ``keys`` exist already updates its ``update``
    columns instead. All rows carry the same columns."""
    if not rows:
        return
    conn = session.connection()
    conn.execute(_statement(conn.dialect.name, table, tuple(keys), tuple(update)), list(rows))


@functools.cache  # built once: building the statement costs more than running it
def _statement(dialect_name: str, table: Table, keys: tuple[str, ...], update: tuple[str, ...]):  # noqa: ANN202
    dialect = postgresql if dialect_name == "postgresql" else sqlite
    stmt = dialect.insert(table)
    if not update:
        return stmt.on_conflict_do_nothing(index_elements=list(keys))
    return stmt.on_conflict_do_update(index_elements=list(keys), set_={c: stmt.excluded[c] for c in update})
