"""Alembic, driven from Python: ``herowatch db upgrade`` and the schema check at start-up."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine

from monitor.storage.db import normalise_url


def migrations_dir() -> Path:
    here = Path(__file__).resolve()
    for candidate in (here.parents[2] / "migrations", here.parents[1] / "migrations"):
        if (candidate / "env.py").is_file():
            return candidate
    raise FileNotFoundError("herowatch's migrations/ folder was not found next to the package")


def alembic_config(url: str) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(migrations_dir()))
    cfg.set_main_option("sqlalchemy.url", normalise_url(url).replace("%", "%%"))
    return cfg


log = logging.getLogger(__name__)


@contextmanager
def _quiet_alembic() -> Iterator[None]:
    """Alembic logs a line per migration at INFO ("Running upgrade 0003 -> 0004 ..."): fourteen lines
    before anything herowatch says. Its warnings and errors still show; the summary is ours."""
    logger = logging.getLogger("alembic")
    was = logger.level
    logger.setLevel(max(logging.WARNING, was))
    try:
        yield
    finally:
        logger.setLevel(was)


def upgrade(url: str, revision: str = "head") -> None:
    """Migrate to ``revision``; one log line says from which revision to which, when anything ran."""
    from sqlalchemy import create_engine

    cfg = alembic_config(url)
    engine = create_engine(normalise_url(url))
    try:
        with _quiet_alembic():
            before = current_revision(engine)
            command.upgrade(cfg, revision)
            after = current_revision(engine)
    finally:
        engine.dispose()
    if before != after:
        log.info("database schema migrated from %s to %s", before or "empty", after)


def downgrade(url: str, revision: str) -> None:
    with _quiet_alembic():
        command.downgrade(alembic_config(url), revision)


def head_revision() -> str | None:
    return ScriptDirectory.from_config(alembic_config("sqlite://")).get_current_head()


def current_revision(engine: Engine) -> str | None:
    with _quiet_alembic(), engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


def is_up_to_date(engine: Engine) -> bool:
    return current_revision(engine) == head_revision()
