"""Multi-row upserts: ``INSERT ... ON CONFLICT (key) DO UPDATE`` for many rows at once.

On PostgreSQL the rows go as one statement whatever their number: one array per column, unnested
by the server (``INSERT ... SELECT ... FROM unnest(...)``), so a batch of thousands of rows costs one
round trip and one statement for the server to plan, and the client converts each column once. On
SQLite (in process, no round trips) a batched executemany of the same ``INSERT``.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from sqlalchemy import JSON, Boolean, Float, Integer, LargeBinary, Table
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection
from sqlalchemy.orm import Session

from monitor.storage.types import EpochTime


def upsert(
    session: Session, table: Table, rows: Sequence[dict], keys: Iterable[str], update: Iterable[str]
) -> None:
    """Insert ``rows`` into ``table``; a row whose ``keys`` exist already updates its ``update``
    columns instead. All rows carry the same columns; of rows with the same keys the last one wins."""
    if not rows:
        return
    keys, update = tuple(keys), tuple(update)
    conn = session.connection()
    if conn.dialect.name == "postgresql":
        _unnest_upsert(conn, table, rows, keys, update)
    else:
        conn.execute(_statement(conn.dialect.name, table, keys, update), list(rows))


@functools.cache  # built once: building the statement costs more than running it
def _statement(dialect_name: str, table: Table, keys: tuple[str, ...], update: tuple[str, ...]):  # noqa: ANN202
    dialect = postgresql if dialect_name == "postgresql" else sqlite
    stmt = dialect.insert(table)
    if not update:
        return stmt.on_conflict_do_nothing(index_elements=list(keys))
    return stmt.on_conflict_do_update(index_elements=list(keys), set_={c: stmt.excluded[c] for c in update})


# ---- PostgreSQL: one statement of column arrays ------------------------------------------------------
Convert = Callable[[Any], Any] | None


def _unnest_upsert(
    conn: Connection, table: Table, rows: Sequence[dict], keys: tuple[str, ...], update: tuple[str, ...]
) -> None:
    columns = tuple(rows[0])
    if len(rows) > 1:  # one row per key: a statement may not update a row twice
        rows = list({tuple(r[k] for k in keys): r for r in rows}.values())
    sql, converts = _unnest_statement(conn.dialect, table, columns, keys, update)
    arrays = []
    for c, convert in zip(columns, converts, strict=True):
        values = [r[c] for r in rows]
        if convert is not None:
            values = [None if v is None else convert(v) for v in values]
        arrays.append(values)
    conn.exec_driver_sql(sql, tuple(arrays))


@functools.cache
def _unnest_statement(
    dialect: Any, table: Table, columns: tuple[str, ...], keys: tuple[str, ...], update: tuple[str, ...]
) -> tuple[str, tuple[Convert, ...]]:
    """The statement (one binary ``%b`` array parameter per column) and how each column's values convert."""
    params, selected, converts = [], [], []
    for c in columns:
        array, select, convert = _column(dialect, table.c[c].type, c)
        params.append(f"CAST(%b AS {array})")  # binary: no text escaping of each value
        selected.append(select)
        converts.append(convert)
    names = ", ".join(f'"{c}"' for c in columns)
    sql = (
        f'INSERT INTO "{table.name}" ({names}) SELECT {", ".join(selected)} '
        f"FROM unnest({', '.join(params)}) AS u({names}) ON CONFLICT ({', '.join(keys)}) "
    )
    if update:
        sql += "DO UPDATE SET " + ", ".join(f'"{c}" = excluded."{c}"' for c in update)
    else:
        sql += "DO NOTHING"
    return sql, tuple(converts)


def _column(dialect: Any, type_: Any, name: str) -> tuple[str, str, Convert]:
    """(the array type the values go as, the column's value from the unnested row, the conversion)."""
    ref = f'u."{name}"'
    if isinstance(type_, EpochTime):  # epoch seconds: the server makes the timestamp
        return "DOUBLE PRECISION[]", f"to_timestamp({ref})", float
    if isinstance(type_, JSON):  # serialised as SQLAlchemy serialises it
        dumps = getattr(dialect, "_json_serializer", None) or json.dumps
        return "TEXT[]", f"CAST({ref} AS {type_.compile(dialect=dialect)})", dumps
    if isinstance(type_, LargeBinary):
        return "BYTEA[]", ref, bytes
    if isinstance(type_, Boolean):
        return "BOOLEAN[]", ref, bool
    if isinstance(type_, Integer):  # a list of one Python type: psycopg picks the array's type by it
        return "BIGINT[]", ref, int
    if isinstance(type_, Float):
        return "DOUBLE PRECISION[]", ref, float
    return f"{type_.compile(dialect=dialect)}[]", ref, str
