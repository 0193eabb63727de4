"""Column types: epoch-seconds floats in Python, timezone-aware timestamps in the database."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import DateTime
from sqlalchemy.types import TypeDecorator


class EpochTime(TypeDecorator):
    """A UTC timestamp column read and written as float epoch seconds.

    SQLite hands back naive datetimes; they are taken as UTC.
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value, dialect):  # type: ignore[override]
        if value is None:
            return None
        if isinstance(value, datetime):
            return value if value.tzinfo else value.replace(tzinfo=UTC)
        return datetime.fromtimestamp(float(value), tz=UTC)

    def process_result_value(self, value, dialect):  # type: ignore[override]
        if value is None:
            return None
        if value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        return value.timestamp()
