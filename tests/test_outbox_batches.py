"""Delivery in batches: replicas claiming at once never send the same notification; the outcomes of a
dispatcher's run are recorded together, soon after each send (one that dies mid-run has recorded what it
sent, and the rest is delivered once after the lease); a cycle's SQL statements do not grow with the
notifications it sends."""

from __future__ import annotations

import threading

import pytest
from sqlalchemy import event, func, select

from alerts.notifiers.base import SendResult
from alerts.outbox import Dispatcher
from monitor.delivery.compose import Composer
from monitor.delivery.pipeline import Pipeline
from monitor.storage.db import make_engine, make_sessionmaker
from monitor.storage.models import Notification
from tests.delivery_support import EXTERNAL_URL, Delivery

T0 = 1_780_000_000.0


class Hook:
    """A receiver that takes everything and remembers what it was sent (thread-safe)."""

    def __init__(self, sessions=None, die_on: int | None = None):
        self.got = []
        self.sessions = sessions
        self.die_on = die_on
        self.recorded_before = []  # rows recorded as sent when each send began
        self._lock = threading.Lock()

    def send(self, view):
        if self.sessions is not None:
            with self.sessions() as s:
                n = s.scalar(
                    select(func.count()).select_from(Notification).where(Notification.status == "sent")
                )
                self.recorded_before.append(n)
        with self._lock:
            if self.die_on is not None and len(self.got) + 1 == self.die_on:
                self.die_on = None
                raise Died("the process is killed while it sends")
            self.got.append(view)
        return SendResult.sent(ref=f"hook:{view.key}")


class Died(BaseException):
    """Not an error a notifier reports: the process ends here (as on SIGTERM)."""


def announced(views) -> list[str]:
    """Every alert id a message announced (firing news), once per message that told of it."""
    return [a.id for v in views for a in v.alerts if a.id in v.changed and a.state == "firing"]


def raise_alerts(d: Delivery, groups: int, per_group: int, runs: str = "run") -> None:
    for g in range(groups):
        for k in range(per_group):
            d.alert(f"rule_{k}", run=f"{runs}-{g:02d}")
    d.now = T0 + 60  # past group_wait


def test_two_replicas_claiming_at_once_never_send_the_same_notification(pg_url):
    hook = Hook()
    d = Delivery(pg_url, {"hook": hook}, T0)
    raise_alerts(d, groups=30, per_group=2)
    in_claim, two_claimed = threading.Event(), threading.Event()

    class Paused(Composer):  # replica one stops inside its claim transaction until replica two has claimed
        def compose_many(self, *args, **kwargs):
            in_claim.set()
            assert two_claimed.wait(10)
            return super().compose_many(*args, **kwargs)

    d.store.composer = Paused(EXTERNAL_URL)
    engine2 = make_engine(pg_url)
    one = Dispatcher(d.store, {"hook": hook}, lambda: d.now, worker="one")
    two = Dispatcher(
        Pipeline(make_sessionmaker(engine2), Composer(EXTERNAL_URL)), {"hook": hook}, lambda: d.now
    )
    sent_one: list[int] = []
    thread = threading.Thread(target=lambda: sent_one.append(one.run_once(limit=10)))
    thread.start()
    try:
        assert in_claim.wait(10), "replica one is claiming"
        sent_two = two.run_once(limit=10)
    finally:
        two_claimed.set()
        thread.join(10)
    assert sent_one == [10]
    assert sent_two == 10, "replica two claimed what replica one had not locked, while it held its locks"
    for _ in range(10):  # then both, until nothing is due
        if one.run_once(limit=10) + two.run_once(limit=10) == 0:
            break
    ids = announced(hook.got)
    assert len(ids) == len(set(ids)) == 60, "every alert announced once, by one replica"
    keys = [v.key for v in hook.got]
    assert len(keys) == len(set(keys)) == 30, "one message per group, none sent twice"
    engine2.dispose()
    d.close()


def test_a_dispatcher_that_dies_mid_run_has_recorded_its_sends_and_the_rest_go_out_once(migrated_url):
    d = Delivery(migrated_url, {"hook": Hook()}, T0)
    hook = Hook(die_on=4)
    raise_alerts(d, groups=6, per_group=1)
    dying = Dispatcher(d.store, {"hook": hook}, lambda: d.now, record_within=float("inf"))
    with pytest.raises(Died):
        dying.run_once()
    assert [s for _, s in d.rows()].count("sent") == 3, "the three sent before it died are recorded"
    assert [s for _, s in d.rows()].count("sending") == 3, "the rest still claimed: not lost"
    d.now += 61  # their lease (60 s) runs out: the next process takes them
    restarted = Dispatcher(d.store, {"hook": hook}, lambda: d.now, worker="restarted")
    assert restarted.run_once() == 3
    assert [s for _, s in d.rows()] == ["sent"] * 6
    ids = announced(hook.got)
    assert len(ids) == len(set(ids)) == 6, "each alert delivered once"
    d.close()


def test_a_send_is_recorded_within_record_within_of_it(migrated_url):
    d = Delivery(migrated_url, {"hook": Hook()}, T0)
    raise_alerts(d, groups=4, per_group=1)
    hook = Hook(sessions=d.sessions)
    ticks = iter(range(1000))
    slow = Dispatcher(
        d.store, {"hook": hook}, lambda: d.now, timer=lambda: float(next(ticks)), record_within=0.5
    )
    assert slow.run_once() == 4
    assert hook.recorded_before == [0, 1, 2, 3], "each send took a second: recorded before the next began"
    raise_alerts(d, groups=4, per_group=1)  # four more episodes' news
    d.now = T0 + 400
    hook.recorded_before.clear()
    quick = Dispatcher(d.store, {"hook": hook}, lambda: d.now, timer=lambda: 0.0, record_within=0.5)
    assert quick.run_once() == 4
    assert hook.recorded_before == [4, 4, 4, 4], "quick sends: recorded together at the end"
    assert [s for _, s in d.rows()] == ["sent"] * 8
    d.close()


def test_a_cycle_s_statements_do_not_grow_with_the_notifications_it_sends(migrated_url):
    statements = []
    for groups in (4, 40):
        hook = Hook()
        d = Delivery(migrated_url, {"hook": hook}, T0)
        raise_alerts(d, groups=groups, per_group=2, runs=f"round-{groups}")
        count = [0]
        event.listen(d.engine, "before_cursor_execute", lambda *a, c=count: c.__setitem__(0, c[0] + 1))
        sent = d.dispatcher.run_once()
        assert sent == groups and len(announced(hook.got)) == 2 * groups
        statements.append(count[0])
        d.close()
    few, many = statements
    assert many <= few + 2, f"{few} statements for 4 messages, {many} for 40"
    assert many < 40, "a few statements per batch, not several per notification"
