"""The batched write path keeps what must be durable at once: an alert transition and its outbox row
are written in the poll batch's one transaction, or neither is (SQLite and PostgreSQL)."""

from __future__ import annotations

import threading

import pytest
from sqlalchemy import func, select

from monitor.engine.batching import Writes
from monitor.storage.models import Alert, AlertTransition, Notification, Run, SeriesBucket
from tests.helpers import make_service, sim_id

CONFIG = """
watch:
  - name: hero-stall
    poll_interval: 60s
    sim: {seed: 3, step_time: 10s, checkpoint_every: 50, incidents: [{kind: stall, at: 10m, duration: 30m}]}
  - name: hero-calm
    poll_interval: 60s
    sim: {seed: 4, step_time: 12s}
"""


def poll_all(service) -> dict[str, str]:
    """Both watches polled at once, so that their results are written in one batch. Returns the runs
    whose part of the write failed and was set aside (``monitor.engine.isolation``)."""
    service.engine.batches.window = 1.0
    errors: list[BaseException] = []
    set_aside: dict[str, str] = {}

    def one(name: str) -> None:
        try:
            set_aside.update(service.engine.poll(name).set_aside)
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            errors.append(exc)

    threads = [threading.Thread(target=one, args=(n,)) for n in service.engine.watches]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return set_aside


def counts(service) -> dict[str, int]:
    with service.sessions() as s:
        return {
            "firing": s.scalar(select(func.count()).select_from(Alert).where(Alert.state == "firing")),
            "transitions": s.scalar(
                select(func.count()).select_from(AlertTransition).where(AlertTransition.to_state == "firing")
            ),
            "outbox": s.scalar(select(func.count()).select_from(Notification)),
        }


def warm_up(service, clock) -> None:
    """Polled into the stall, before it fires: both runs known, nothing firing yet."""
    for _ in range(20):
        clock.advance(60)
        poll_all(service)
    assert counts(service) == {"firing": 0, "transitions": 0, "outbox": 0}


def test_alert_and_its_outbox_row_are_written_together(db_url, clock):
    service, _ = make_service(db_url, clock, CONFIG)
    try:
        warm_up(service, clock)
        for _ in range(12):
            clock.advance(60)
            poll_all(service)
        got = counts(service)
        assert got["firing"] >= 1 and got["transitions"] >= 1 and got["outbox"] >= 1
        with service.sessions() as s:
            alert = s.scalars(select(Alert).where(Alert.state == "firing")).first()
            assert s.scalar(select(Notification).where(Notification.alert_id == alert.id)) is not None
            # the calm run's poll of the same batches was written too
            calm = s.get(Run, sim_id("hero-calm"))
            assert calm.last_step is not None and calm.last_polled_at == clock.time()
    finally:
        service.stop()


@pytest.mark.parametrize("where", ["after the outbox row", "at the end of the batch"])
def test_a_failed_batch_writes_neither_the_alert_nor_its_outbox_row(db_url, clock, monkeypatch, where):
    service, _ = make_service(db_url, clock, CONFIG)
    try:
        warm_up(service, clock)
        with service.sessions() as s:
            buckets = s.scalar(select(func.count()).select_from(SeriesBucket))
        if where == "after the outbox row":
            enqueue = service.engine.recorder.delivery.on_transition

            def enqueue_then_fail(s, alert, to_state, now):  # noqa: ANN001, ANN202
                enqueue(s, alert, to_state, now)
                s.flush()  # the alert, its transition and the outbox row are in the transaction now
                raise RuntimeError("the database went away")

            monkeypatch.setattr(service.engine.recorder.delivery, "on_transition", enqueue_then_fail)
        else:
            real_flush = Writes.flush

            def flush_then_fail(self, s, now):  # noqa: ANN001, ANN202
                real_flush(self, s, now)
                if s.scalar(select(func.count()).select_from(Notification)):  # the alert's batch
                    raise RuntimeError("the commit failed")

            monkeypatch.setattr(Writes, "flush", flush_then_fail)
        set_aside: dict[str, str] = {}
        for _ in range(12):  # until the alert's write fails (the stall lasts 30 minutes)
            clock.advance(60)
            set_aside.update(poll_all(service))
            if set_aside:
                break
        # the batch failed, then each poll was written again run by run: the run whose write failed is
        # set aside (its alert and outbox row rolled back together), the other runs are written
        assert set(set_aside) == {sim_id("hero-stall")}, set_aside
        assert counts(service) == {"firing": 0, "transitions": 0, "outbox": 0}
        with service.sessions() as s:
            assert s.scalar(select(func.count()).select_from(SeriesBucket)) >= buckets
            calm = s.get(Run, sim_id("hero-calm"))
            assert calm.last_polled_at == clock.time(), "the other watch's poll of the batch was written"
        monkeypatch.undo()
        for _ in range(12):  # the next polls take the watches up again and write the alert with its row
            clock.advance(60)
            poll_all(service)
        got = counts(service)
        assert got["firing"] >= 1 and got["outbox"] >= 1
    finally:
        service.stop()


def test_chart_bookkeeping_is_written_every_few_polls_and_at_shutdown(db_url, clock):
    """A series' bookkeeping row (points folded, bucket width) is not rewritten on every poll: it lags
    by at most ``META_EVERY`` polls, the overview's sparklines still move on every poll, and a stop
    writes what lagged."""
    from monitor.storage.models import SeriesMeta
    from monitor.storage.series_tails import META_EVERY
    from monitor.web.dashboard.charts import SparkCache

    service, _ = make_service(db_url, clock, CONFIG)
    service.engine.resume()
    run = sim_id("hero-calm", "hero-calm")
    cache, sparks = SparkCache(), []
    for _ in range(2):  # the run starts logging
        clock.advance(60)
        service.engine.poll("hero-calm")
    for _ in range(META_EVERY + 2):
        clock.advance(60)
        service.engine.poll("hero-calm")
        with service.sessions() as s:
            sparks.append(cache.get_many(s, [run])[run])
            stored = s.get(SeriesMeta, (run, "train/loss")).points
            buckets = s.scalar(
                select(func.sum(SeriesBucket.count)).where(
                    SeriesBucket.run_id == run, SeriesBucket.metric == "train/loss"
                )
            )
        # a step every 12 s: at most META_EVERY polls behind
        assert buckets - 6 * META_EVERY <= stored <= buckets
    assert stored < buckets, "the last polls' count is not written yet"
    assert len({sp.data for sp in sparks}) == len(sparks), "every poll's points show in the sparkline"
    service.stop()
    with service.sessions() as s:
        assert s.get(SeriesMeta, (run, "train/loss")).points == buckets
