"""Values a source or a job sends that storage cannot hold (issue 37): a step of 2^63 or 1e30, a time
past year 9999. They are checked where they enter (``PollResult.validated``, the ingest door): the door
answers 422 naming the field; a source's value is dropped there, the rest of its sample kept; nothing
reaches the database that would fail the poll's write and blind the watch. On SQLite and PostgreSQL."""

from __future__ import annotations

from sqlalchemy import select

from alerts.clock import ManualClock
from monitor.samples import MAX_STEP, RunInfo, Sample
from monitor.sources.base import PollResult
from monitor.storage.models import GoodputEvent, Run
from tests.helpers import make_service
from tests.test_ingest_door import AUTH, door, read

CONFIG = """
watch:
  - name: jobs
    poll_interval: 60s
    sim: {seed: 1}
"""


class Rows:
    """A source whose next poll returns ``self.next`` (samples), with a run row for each run in them."""

    kind = "sim"

    def __init__(self) -> None:
        self.next: list[Sample] = []

    def poll(self, target, cursors, now):
        rows, self.next = self.next, []
        runs = sorted({s.run for s in rows})
        return PollResult(
            samples=rows,
            runs=[RunInfo(run=r, source="sim", state="running", heartbeat_at=1e300) for r in runs],
            cursors={r: {"n": len(rows)} for r in runs},
        )

    def close(self) -> None:
        pass


def test_steps_and_times_beyond_storage_are_dropped_at_entry_and_the_other_runs_are_written(db_url):
    clock = ManualClock(1_780_000_000.0)
    service, _ = make_service(db_url, clock, CONFIG)
    source = Rows()
    service.engine.sources = {"sim": source}
    service.engine.resume()
    try:
        t = clock.time()
        source.next = [
            Sample(t - 30, "big", 2**63, {"train/loss": 1.0}, state="running"),
            Sample(t - 20, "big", 10**30, {"train/loss": 1.0}),
            Sample(t - 19, "big", 1e30, {"train/loss": 1.0}),
            Sample(1e20, "big", 5, {"train/loss": 1.0}),
            Sample(t - 10, "max", MAX_STEP, {"train/loss": 1.0}, state="running"),
            Sample(t - 10, "ok", 100, {"train/loss": 2.0}, state="running"),
        ]
        clock.advance(60)
        service.engine.poll("jobs")  # must not raise: nothing storage cannot hold reaches it
        t = clock.time()
        source.next = [
            Sample(t - 5, "max", 0, {"train/loss": 1.0}),  # a rewind of 2^63-1 steps: a counter that big
            Sample(t - 5, "ok", 101, {"train/loss": 2.0}, state="failed"),
        ]
        clock.advance(60)
        service.engine.poll("jobs")
        with service.sessions() as s:
            runs = {r.id: r for r in s.scalars(select(Run))}
            redone = [
                e.steps_redone for e in s.scalars(select(GoodputEvent).where(GoodputEvent.run_id == "max"))
            ]
        assert runs["ok"].last_step == 101 and runs["ok"].state == "failed", "the healthy run is written"
        assert runs["big"].last_step is None, "no step storage cannot hold; the run itself is watched"
        assert runs["big"].last_seen_at is not None and runs["big"].last_seen_at < 1e12
        assert runs["max"].last_step == 0 and runs["max"].restarts == 1
        assert all(0 <= n <= 2**31 - 1 for n in redone), redone
    finally:
        service.stop()


def test_the_door_refuses_a_step_storage_cannot_hold_with_a_422_naming_the_field(tmp_path):
    web = door(tmp_path)
    for step in (2**63, 10**30, 1e30):
        r = web.post(
            "/api/ingest", json={"run": "big", "samples": [{"step": step, "metrics": {"a": 1}}]}, headers=AUTH
        )
        assert r.status_code == 422, (step, r.text)
        assert "step" in r.json()["error"] and "samples" in r.json()["error"], r.text
    event = web.post(
        "/api/ingest", json={"run": "big", "events": [{"kind": "started", "step": 2**64}]}, headers=AUTH
    )
    assert event.status_code == 422 and "step" in event.json()["error"], event.text
    fits = web.post(
        "/api/ingest", json={"run": "big", "samples": [{"step": MAX_STEP, "metrics": {"a": 1}}]}, headers=AUTH
    )
    assert fits.status_code == 202, fits.text
    assert [s.step for s in read(tmp_path).samples] == [MAX_STEP]


def test_the_door_refuses_run_names_that_do_not_read_as_they_are(tmp_path):
    web = door(tmp_path)
    for name, what in (("evil\u202egnp", "U+202E"), ("a\u200bb", "U+200B"), ("a\u2028b", "U+2028")):
        r = web.post(
            "/api/ingest", json={"run": name, "samples": [{"step": 1, "metrics": {"a": 1}}]}, headers=AUTH
        )
        assert r.status_code == 422, (name, r.text)
        assert "run" in r.json()["error"] and what in r.json()["error"], r.text
    assert read(tmp_path).samples == [], "nothing of a refused push is kept"
    ok = web.post("/api/ingest", json={"run": "élève-👩‍🔬", "samples": [{"step": 1}]}, headers=AUTH)
    assert ok.status_code == 202, ok.text
