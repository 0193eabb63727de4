"""Several replicas on one PostgreSQL: leases split the watches, a dead replica's watches are taken over
within one lease period, nothing is polled twice, no alert is raised twice. SQLite stays single-process."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select

from monitor.service import DatabaseInUse
from monitor.storage.db import make_engine, make_sessionmaker
from monitor.storage.leases import Leases
from monitor.storage.models import Alert, Notification
from tests.helpers import make_service


def test_a_lease_has_one_holder_until_it_expires(migrated_url):
    engine = make_engine(migrated_url)
    sessions = make_sessionmaker(engine)
    a, b = Leases(sessions, "a"), Leases(sessions, "b")
    assert a.acquire("poll:x", 100.0, 30.0)
    assert not b.acquire("poll:x", 110.0, 30.0)
    assert a.acquire("poll:x", 120.0, 30.0), "the holder renews"
    assert not b.acquire("poll:x", 149.0, 30.0)
    assert b.acquire("poll:x", 150.0, 30.0), "expired: taken over"
    with sessions.begin() as s:
        assert b.holds(s, "poll:x", 151.0) and not a.holds(s, "poll:x", 151.0)
    b.release("poll:x")
    assert a.acquire("poll:x", 152.0, 30.0)
    engine.dispose()


def test_two_replicas_split_the_work_and_take_over_from_a_dead_one(pg_url, clock):
    one, out1 = make_service(pg_url, clock)
    two, out2 = make_service(pg_url, clock)
    one.engine.leases.holder, two.engine.leases.holder = "replica-1", "replica-2"
    polled = {"replica-1": [], "replica-2": []}

    def cycle(replicas):
        clock.advance(60)
        for svc in replicas:
            for name in svc.engine.watches:
                if not svc.engine.poll(name).skipped:
                    polled[svc.engine.leases.holder].append((clock.time(), name))
            svc.dispatcher.run_once()

    one.engine.resume()
    two.engine.resume()
    for _ in range(8):  # both alive
        cycle([one, two])
    times = [(t, n) for got in polled.values() for t, n in got]
    assert len(times) == len(set(times)) == 16, "each watch polled once per cycle, never by both"
    owner = {n: h for h, got in polled.items() for _, n in got}
    assert set(owner) == {"hero-a", "hero-b"}
    dead = one if owner["hero-a"] == "replica-1" else two
    alive = two if dead is one else one
    before = len(polled[alive.engine.leases.holder])
    for _ in range(25):  # the owner of hero-a died (stops polling); the stall begins at 10m
        cycle([alive])
    taken = [n for _, n in polled[alive.engine.leases.holder][before:]]
    assert taken.count("hero-a") >= 25 - 3 - 1, "taken over within one lease period (3 poll intervals)"
    with alive.sessions() as s:
        stalled = s.scalars(select(Alert).where(Alert.rule == "progress_stalled")).all()
        assert [(a.run_id, a.state) for a in stalled] == [("sim:hero-a/hero-a", "firing")]
        assert (
            s.scalar(select(func.count()).select_from(Notification).where(Notification.status == "sent")) == 1
        )
    assert (out1.getvalue() + out2.getvalue()).count("FIRING CRITICAL progress_stalled") == 1
    one.stop()
    two.stop()


def test_a_replica_that_lost_its_lease_mid_cycle_writes_nothing(pg_url, clock):
    one, _ = make_service(pg_url, clock)
    two, _ = make_service(pg_url, clock)
    one.engine.leases.holder, two.engine.leases.holder = "replica-1", "replica-2"
    clock.advance(60)
    assert not one.engine.poll("hero-a").skipped
    real = one.engine.sources["sim"]

    class Slow:
        kind = "sim"

        def poll(self, target, cursors, now):
            res = real.poll(target, cursors, now)
            clock.advance(600)  # the poll outlives the lease; the other replica takes the watch
            assert two.engine._take_lease("hero-a")
            return res

        def close(self):
            pass

    one.engine.sources["sim"] = Slow()
    report = one.engine.poll("hero-a")
    assert report.skipped and "hero-a" not in one.engine.adopted
    one.stop()
    two.stop()


def test_sqlite_is_single_process(tmp_path, clock):
    url = f"sqlite:///{tmp_path / 'hw.db'}"
    first, _ = make_service(url, clock)
    first.claim_database()
    second, _ = make_service(url, clock)
    with pytest.raises(DatabaseInUse, match="SQLite is single-process"):
        second.claim_database()
    first.stop()
    second.claim_database()  # free again once the first has stopped
    second.stop()
