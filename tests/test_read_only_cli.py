"""Read-only commands never create or change a database: `herowatch report` out of the box (no database
yet) says where it looked and leaves no file behind; after `make demo` (the demo's database in the data
folder) the README's report command reads the demo's week; a database at an old schema is not migrated.
Each command runs as a real process."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

from sqlalchemy import create_engine, text

from monitor.storage import migrate

HEROWATCH = [sys.executable, "-m", "monitor.cli"]


def run(args: list[str], home: Path, **env: str) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("HEROWATCH_")}
    environ.update(XDG_DATA_HOME=str(home / "data"), HOME=str(home), **env)
    return subprocess.run(
        [*HEROWATCH, *args], capture_output=True, text=True, env=environ, cwd=home, timeout=60
    )


def files(home: Path) -> set[str]:
    return {str(p.relative_to(home)) for p in home.rglob("*")}


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_report_without_a_database_says_so_and_creates_nothing(tmp_path):
    before = files(tmp_path)
    r = run(["report", "--format", "md"], tmp_path)
    assert r.returncode == 2, r.stderr
    assert "no database at" in r.stderr and "herowatch.db" in r.stderr and "make demo" in r.stderr
    assert files(tmp_path) == before, "no empty herowatch.db left behind"
    explicit = tmp_path / "elsewhere.db"
    r = run(["report", "--database-url", f"sqlite:///{explicit}"], tmp_path)
    assert r.returncode == 2 and "no database at" in r.stderr and not explicit.exists()


def test_after_make_demo_the_readme_report_command_reads_the_demos_database(tmp_path):
    demo = tmp_path / "data" / "herowatch" / "demo.db"
    demo.parent.mkdir(parents=True)
    migrate.upgrade(f"sqlite:///{demo}")
    before, sums = files(tmp_path), digest(demo)
    r = run(["report", "--format", "json", "--since", "7d"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert "demo.db" in r.stderr and '"runs"' in r.stdout
    sidecars = {f"data/herowatch/demo.db-{x}" for x in ("wal", "shm")}  # SQLite's, for reading in WAL mode
    assert files(tmp_path) - sidecars == before and digest(demo) == sums, "read, not written"
    assert "herowatch.db" not in " ".join(files(tmp_path))


def test_a_database_at_an_old_schema_is_not_migrated_by_a_read(tmp_path):
    db = tmp_path / "old.db"
    url = f"sqlite:///{db}"
    migrate.upgrade(url)
    engine = create_engine(url)
    with engine.begin() as conn:
        conn.execute(text("UPDATE alembic_version SET version_num = '0010'"))
    engine.dispose()
    sums = digest(db)
    r = run(["report"], tmp_path, HEROWATCH_DATABASE_URL=url)
    assert r.returncode == 2 and "herowatch db upgrade" in r.stderr, r.stderr
    assert digest(db) == sums


CONFIG = """
watch:
  - name: hero
    sim: {run: hero-1}
"""

READ_ONLY = [
    ["rules", "list"],
    ["rules", "list", "hero"],
    ["example-config"],
    ["check-config", "hero.yaml"],
    ["check-config", "hero.yaml", "--explain"],
    ["db", "current"],
    ["report", "--format", "md"],
]


def test_every_read_only_command_leaves_no_database_behind(tmp_path):
    (tmp_path / "hero.yaml").write_text(CONFIG)
    before = files(tmp_path)
    for args in READ_ONLY:
        r = run(args, tmp_path)
        assert r.returncode in (0, 2), (args, r.stdout, r.stderr)
        assert files(tmp_path) == before, f"`herowatch {' '.join(args)}` left {files(tmp_path) - before}"
    r = run(["check-config", "hero.yaml", "--explain"], tmp_path)
    assert r.returncode == 0 and "no database yet" in r.stdout, r.stdout
    r = run(["db", "current"], tmp_path)
    assert r.returncode == 2 and "cannot read" in r.stderr, r.stderr


def test_explain_and_db_current_read_a_database_without_changing_it(tmp_path):
    (tmp_path / "hero.yaml").write_text(CONFIG)
    db = tmp_path / "server.db"
    url = f"sqlite:///{db}"
    migrate.upgrade(url)
    sums = digest(db)
    r = run(["check-config", "hero.yaml", "--explain"], tmp_path, HEROWATCH_DATABASE_URL=url)
    assert r.returncode == 0 and "no run of this watch in the database yet" in r.stdout, r.stdout + r.stderr
    r = run(["db", "current"], tmp_path, HEROWATCH_DATABASE_URL=url)
    assert r.returncode == 0 and f"current: {migrate.head_revision()}" in r.stdout, r.stderr
    assert digest(db) == sums, "read, not written"
