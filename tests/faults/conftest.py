"""Most fault tests run on embedded SQLite only to keep the suite short; those that matter on both
databases use the parent conftest's ``db_url`` (SQLite and the real PostgreSQL)."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'herowatch.db'}"
