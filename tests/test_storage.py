"""Storage on SQLite and the real PostgreSQL: migrations both ways, bounded min/max series, outbox claims."""

from __future__ import annotations

import math

from sqlalchemy import func, inspect, select, text

from alerts.notifiers.base import SendResult
from alerts.outbox import Dispatcher
from monitor.delivery.pipeline import Pipeline
from monitor.samples import RunInfo, Sample
from monitor.storage import migrate, runs_repo
from monitor.storage.db import make_engine, make_sessionmaker
from monitor.storage.models import Notification, SeriesBucket, SeriesMeta
from monitor.storage.series import MAX_BUCKETS, read_series

TABLES = {
    "runs",
    "source_cursors",
    "alerts",
    "alert_transitions",
    "notifications",
    "silences",
    "series_meta",
    "series_buckets",
}


def test_migrations_upgrade_downgrade_upgrade(db_url):
    migrate.upgrade(db_url)
    engine = make_engine(db_url)
    assert TABLES <= set(inspect(engine).get_table_names())
    assert migrate.is_up_to_date(engine)
    migrate.downgrade(db_url, "base")
    assert not (TABLES & set(inspect(engine).get_table_names()))
    migrate.upgrade(db_url)
    assert TABLES <= set(inspect(engine).get_table_names())
    engine.dispose()


def test_sqlite_migrations_keep_child_rows(tmp_path):
    """A batch migration recreates tables on SQLite; with foreign keys on, ON DELETE CASCADE would wipe
    children. Migration 0002 rebuilds ``runs`` both ways: a run's cursor must survive the round trip."""
    url = f"sqlite:///{tmp_path / 'x.db'}"
    migrate.upgrade(url)
    engine = make_engine(url)
    sessions = make_sessionmaker(engine)
    with sessions.begin() as s:
        runs_repo.upsert_run(s, RunInfo(run="r", source="sim"), "w", 1.0)
        s.flush()
        runs_repo.save_cursors(s, "sim", {"r": {"t": 1.0}}, 1.0)
    engine.dispose()
    migrate.downgrade(url, "0001")  # rebuilds the parent table `runs` (drops runs.stats)
    migrate.upgrade(url)  # and again (adds it back)
    with engine.connect() as c:
        assert c.execute(text("select count(*) from source_cursors")).scalar() == 1
        assert c.execute(text("PRAGMA foreign_keys")).scalar() == 1, "the service runs with foreign keys on"
    engine.dispose()


def test_series_stay_bounded_and_keep_a_one_step_spike(migrated_url):
    engine = make_engine(migrated_url)
    sessions = make_sessionmaker(engine)
    n, spike_at = 30_000, 17_321
    with sessions.begin() as s:
        run = runs_repo.upsert_run(s, RunInfo(run="long", source="sim"), "w", 0.0)
    for start in range(0, n, 3000):  # like polls: a batch of new steps at a time
        with sessions.begin() as s:
            run = runs_repo.upsert_run(s, RunInfo(run="long", source="sim"), "w", 0.0)
            batch = [
                Sample(
                    t=float(i),
                    run="long",
                    step=i,
                    metrics={
                        "train/loss": 50.0 if i == spike_at else 3.0 - i * 1e-5,
                        "grad/norm/total": math.nan if i == 2000 else 0.3,
                    },
                )
                for i in range(start, min(n, start + 3000))
            ]
            runs_repo.record_samples(s, run, batch)
    with sessions() as s:
        axis, buckets = read_series(s, "long", "train/loss")
        assert axis == "step"
        assert len(buckets) <= MAX_BUCKETS
        assert sum(b.count for b in buckets) == n
        assert max(b.max for b in buckets) == 50.0, "the one-step spike survived compaction"
        spike = next(b for b in buckets if b.max == 50.0)
        assert spike.x0 <= spike_at < spike.x1
        assert min(b.min for b in buckets) == 3.0 - (n - 1) * 1e-5
        _, grads = read_series(s, "long", "grad/norm/total")
        assert sum(b.nonfinite for b in grads) == 1, "a NaN is counted, not folded into min/max"
        assert s.scalar(select(func.count()).select_from(SeriesBucket)) <= 2 * MAX_BUCKETS
        assert s.get(SeriesMeta, ("long", "train/loss")).points == n
        run = runs_repo.list_runs(s)[0]
        assert run.last_step == n - 1
    engine.dispose()


class Recorder:
    def __init__(self, results):
        self.results = list(results)
        self.sent = []

    def send(self, n):
        self.sent.append(n.key)
        return self.results.pop(0) if self.results else SendResult.sent("ts-1")


def _enqueue(sessions, key="k1", now=100.0):
    with sessions.begin() as s:
        s.add(
            Notification(
                idempotency_key=key,
                receiver="console",
                status="pending",
                attempts=0,
                payload={
                    "status": "firing",
                    "alertname": "a",
                    "severity": "critical",
                    "labels": {"run": "r"},
                    "annotations": {},
                    "started_at": now,
                },
                next_attempt_at=now,
                created_at=now,
            )
        )


def test_outbox_retries_with_retry_after_and_records_the_outcome(migrated_url):
    engine = make_engine(migrated_url)
    sessions = make_sessionmaker(engine)
    _enqueue(sessions)
    now = [100.0]
    rec = Recorder(
        [SendResult.transient("429 rate limited", retry_after=30), SendResult.permanent("bad channel")]
    )
    d = Dispatcher(Pipeline(sessions), {"console": rec}, lambda: now[0])
    assert d.run_once() == 0
    with sessions() as s:
        row = s.scalars(select(Notification)).one()
        assert (row.status, row.attempts, row.next_attempt_at) == ("pending", 1, 130.0)
        assert "429" in row.last_error
    now[0] = 120.0
    assert d.run_once() == 0 and len(rec.sent) == 1, "not retried before Retry-After has passed"
    now[0] = 131.0
    d.run_once()
    with sessions() as s:
        row = s.scalars(select(Notification)).one()
        assert (row.status, row.attempts, row.last_error) == ("failed", 2, "bad channel")
    engine.dispose()


def test_a_claim_by_a_dead_worker_expires_and_is_delivered_once(migrated_url):
    engine = make_engine(migrated_url)
    sessions = make_sessionmaker(engine)
    store = Pipeline(sessions)
    _enqueue(sessions)
    claimed = store.claim_due(100.0, 10, "dead-worker", lease_seconds=60)
    assert len(claimed) == 1
    assert store.claim_due(101.0, 10, "other", lease_seconds=60) == [], "a live claim is not taken twice"
    rec = Recorder([])
    d = Dispatcher(store, {"console": rec}, lambda: 161.0)
    assert d.run_once() == 1
    assert d.run_once() == 0
    assert rec.sent == ["k1"]
    with sessions() as s:
        assert s.scalars(select(Notification)).one().external_ref == "ts-1"
    engine.dispose()


def test_the_migrations_build_exactly_the_models(migrated_url):
    """A model change without a migration (or the reverse) fails here, on both databases."""
    from alembic.autogenerate import compare_metadata
    from alembic.runtime.migration import MigrationContext

    from monitor.storage.models import Base

    engine = make_engine(migrated_url)
    with engine.connect() as conn:
        assert compare_metadata(MigrationContext.configure(conn), Base.metadata) == []
    engine.dispose()
