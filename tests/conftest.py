"""Shared fixtures: databases (embedded SQLite and the real PostgreSQL), clocks, paths."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import pytest
from sqlalchemy.engine import make_url

from alerts.clock import ManualClock
from tests.browser import artifacts, browser, page  # noqa: F401 - one Chromium for the session

if TYPE_CHECKING:
    from sqlalchemy import Engine
    from sqlalchemy.orm import Session

T = TypeVar("T")

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


def _fresh_pg_database(admin_url: str, template: str | None = None) -> tuple[str, callable]:
    """A new database (a copy of the database ``template`` if given); returns its URL and a drop."""
    import psycopg

    name = f"hw_test_{uuid.uuid4().hex[:12]}"
    admin = make_url(admin_url).set(drivername="postgresql")
    copy = f' TEMPLATE "{template}"' if template else ""
    with psycopg.connect(admin.render_as_string(hide_password=False), autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"{copy}')

    def drop() -> None:
        with psycopg.connect(admin.render_as_string(hide_password=False), autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    return admin.set(database=name, drivername="postgresql+psycopg").render_as_string(
        hide_password=False
    ), drop


def copy_of(url: str, folder: Path) -> tuple[str, Callable[[], None]]:
    """A new database holding what the database at ``url`` holds (no session may be open on it): for a
    fixture that builds data once and hands each test its own copy. Returns its URL and a drop."""
    import sqlite3

    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        dest = folder / f"copy-{uuid.uuid4().hex[:12]}.db"
        with closing(sqlite3.connect(parsed.database)) as src, closing(sqlite3.connect(dest)) as dst:
            src.backup(dst)
        return f"sqlite:///{dest}", dest.unlink
    return _fresh_pg_database(pg_admin_url(), parsed.database)


@contextmanager
def built_once(
    templates: MigratedTemplates, kind: str, folder: Path, build: Callable[[Session], T]
) -> Iterator[tuple[str, T]]:
    """A migrated database of ``kind`` holding what ``build(session)`` wrote (it commits), for a fixture
    of module scope; each test then takes ``own_copy`` of it. Yields its URL and what ``build`` returned."""
    from sqlalchemy import create_engine
    from sqlalchemy.orm import Session

    url, drop = templates.url(kind, folder)
    engine = create_engine(url)
    try:
        with Session(engine) as s:
            built = build(s)
    finally:
        engine.dispose()  # no session left on it: it is copied for each test
    try:
        yield url, built
    finally:
        drop()


@contextmanager
def own_copy(url: str, folder: Path) -> Iterator[Engine]:
    """An engine on a test's own copy of the database at ``url`` (dropped after): the test may change it."""
    from sqlalchemy import create_engine

    copy, drop = copy_of(url, folder)
    engine = create_engine(copy)
    try:
        yield engine
    finally:
        engine.dispose()
        drop()


class MigratedTemplates:
    """One database per kind migrated by ``migrate.upgrade`` once a session (a worker's), copied for each
    test that wants a migrated one: a PostgreSQL ``CREATE DATABASE ... TEMPLATE`` or an SQLite backup
    takes a fraction of a second where running the migrations took 2-5 s on the shared CI machine."""

    def __init__(self, folder: Path, pg_server_url: Callable[[], str]) -> None:
        self.folder, self.pg_server_url = folder, pg_server_url
        self._sqlite: Path | None = None
        self._pg: tuple[str, Callable[[], None]] | None = None

    def sqlite_copy(self, dest: Path) -> str:
        import sqlite3

        from monitor.storage import migrate

        if self._sqlite is None:
            template = self.folder / "template.db"
            migrate.upgrade(f"sqlite:///{template}")
            self._sqlite = template
        with closing(sqlite3.connect(self._sqlite)) as src, closing(sqlite3.connect(dest)) as dst:
            src.backup(dst)
        return f"sqlite:///{dest}"

    def url(self, kind: str, folder: Path) -> tuple[str, Callable[[], None]]:
        """A new migrated database of ``kind`` (sqlite, postgres) and its drop."""
        if kind == "sqlite":
            dest = folder / f"migrated-{uuid.uuid4().hex[:12]}.db"
            return self.sqlite_copy(dest), dest.unlink
        return _fresh_pg_database(self.pg_server_url(), self.pg_template())

    def pg_template(self) -> str:
        from monitor.storage import migrate

        if self._pg is None:
            url, drop = _fresh_pg_database(self.pg_server_url())
            migrate.upgrade(url)  # its engine is disposed: no session left to block the copies
            self._pg = (make_url(url).database, drop)
        return self._pg[0]

    def close(self) -> None:
        if self._pg is not None:
            self._pg[1]()


@pytest.fixture(scope="session")
def migrated_templates(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[MigratedTemplates]:
    templates = MigratedTemplates(
        tmp_path_factory.mktemp("templates"), lambda: request.getfixturevalue("pg_server_url")
    )
    try:
        yield templates
    finally:
        templates.close()


@pytest.fixture(params=["sqlite", "postgres"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """An empty database: an SQLite file, or a new database on the real PostgreSQL server. Migrated
    already when the test asks for ``migrated_url`` (the same database): a copy of a migrated one."""
    migrated = "migrated_url" in request.fixturenames
    templates = request.getfixturevalue("migrated_templates") if migrated else None
    if request.param == "sqlite":
        path = tmp_path / "herowatch.db"
        yield templates.sqlite_copy(path) if templates else f"sqlite:///{path}"
        return
    template = templates.pg_template() if templates else None
    url, drop = _fresh_pg_database(request.getfixturevalue("pg_server_url"), template)
    try:
        yield url
    finally:
        drop()


@pytest.fixture
def pg_url(pg_server_url: str, migrated_templates: MigratedTemplates) -> Iterator[str]:
    """A new database on the real PostgreSQL server, migrated: for what only PostgreSQL does (row
    locks between replicas, leases, several processes)."""
    url, drop = _fresh_pg_database(pg_server_url, migrated_templates.pg_template())
    try:
        yield url
    finally:
        drop()


@pytest.fixture
def migrated_url(db_url: str) -> str:
    """``db_url`` migrated to the head revision (``db_url`` made it as a copy of a migrated database)."""
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
