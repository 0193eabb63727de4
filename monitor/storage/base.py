"""The declarative base every table registers on, with the constraint naming convention the
migrations rely on. Its own module so that table modules (models.py, people_models.py) can be
imported in any order."""

from __future__ import annotations

from typing import Any

from sqlalchemy import JSON, Float, MetaData
from sqlalchemy.orm import DeclarativeBase

NAMING = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING)
    type_annotation_map = {dict[str, Any]: JSON, float: Float}
