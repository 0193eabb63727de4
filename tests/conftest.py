"""Shared fixtures: databases (embedded SQLite and the real PostgreSQL), clocks, paths."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy.engine import make_url

from alerts.clock import ManualClock
from tests.browser import artifacts, browser, page  # noqa: F401 - one Chromium for the session

REPO = Path(__file__).resolve().parents[1]
# the real public logs: ../shared/data/real next to the checkout (a worktree may sit a level deeper)
REAL_DATA = next(
    (p / "shared" / "data" / "real" for p in REPO.parents if (p / "shared" / "data" / "real").is_dir()),
    REPO.parent / "shared" / "data" / "real",
)

# Tests must never write to the developer's own data folder, W&B config or home.
os.environ.setdefault("WANDB_ERROR_REPORTING", "false")


def pg_admin_url() -> str:
    url = os.environ.get("TEST_DATABASE_URL")
    if not url:
        raise RuntimeError(
            "TEST_DATABASE_URL is not set: run the tests with scripts/test, which finds or starts "
            "PostgreSQL (the storage tests need the real server, they are never skipped)"
        )
    return url


@pytest.fixture(scope="session")
def pg_server_url() -> str:
    import psycopg

    url = pg_admin_url()
    plain = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
    psycopg.connect(plain, connect_timeout=5).close()  # fail loudly, never skip
    return url


def _fresh_pg_database(admin_url: str) -> tuple[str, callable]:
    import psycopg

    name = f"hw_test_{uuid.uuid4().hex[:12]}"
    admin = make_url(admin_url).set(drivername="postgresql")
    with psycopg.connect(admin.render_as_string(hide_password=False), autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')

    def drop() -> None:
        with psycopg.connect(admin.render_as_string(hide_password=False), autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    return admin.set(database=name, drivername="postgresql+psycopg").render_as_string(
        hide_password=False
    ), drop


@pytest.fixture(params=["sqlite", "postgres"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """An empty database: an SQLite file, or a new database on the real PostgreSQL server."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'herowatch.db'}"
        return
    url, drop = _fresh_pg_database(request.getfixturevalue("pg_server_url"))
    try:
        yield url
    finally:
        drop()


@pytest.fixture
def pg_url(pg_server_url: str) -> Iterator[str]:
    """A new database on the real PostgreSQL server, migrated: for what only PostgreSQL does (row
    locks between replicas, leases, several processes)."""
    from monitor.storage import migrate

    url, drop = _fresh_pg_database(pg_server_url)
    try:
        migrate.upgrade(url)
        yield url
    finally:
        drop()


@pytest.fixture
def migrated_url(db_url: str) -> str:
    from monitor.storage import migrate

    migrate.upgrade(db_url)
    return db_url


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(1_780_000_000.0)


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    data = tmp_path_factory.mktemp("xdg")
    monkeypatch.setenv("XDG_DATA_HOME", str(data))
    # a developer's own Slack app token must not connect tests' services to a real Slack
    for var in ("HEROWATCH_DATABASE_URL", "HEROWATCH_LISTEN", "SLACK_APP_TOKEN", "HEROWATCH_SLACK_API_URL"):
        monkeypatch.delenv(var, raising=False)


def _start_rank(item: pytest.Item) -> int:
    """0: a live test (real servers, real processes, minutes); 1: a file marked ``slow``; 2: the rest."""
    if "/tests/live/" in str(item.path):
        return 0
    return 1 if item.get_closest_marker("slow") is not None else 2


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The long tests run first: with `--dist loadfile` files are handed out in this order (scripts/test
    passes `--no-loadscope-reorder`: xdist's own order, most tests first, put the one-test live files
    last), so the long ones start early and the short ones fill the workers' tails."""
    items.sort(key=_start_rank)
