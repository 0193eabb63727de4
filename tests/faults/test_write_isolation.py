"""A write that fails for one run's data never takes the other runs of the watch with it (issue 37).

The fault is forced in the database driver (a SQLAlchemy ``before_cursor_execute`` hook refuses every
write that carries the poisoned run's id, as a value storage cannot hold would), on SQLite and on
PostgreSQL. Before, the whole poll rolled back at every poll: another run's exit never paged, and
nothing said so. Now the bad run is set aside (logged, reported), the rest is written, and a watch whose
writes keep failing raises ``write_failing`` (critical) and is not ready."""

from __future__ import annotations

from fastapi.testclient import TestClient
from sqlalchemy import event, select

from alerts.clock import ManualClock
from monitor.samples import RunInfo, Sample
from monitor.sources.base import PollResult
from monitor.storage.models import Alert, Run
from monitor.web.app import create_app
from tests.helpers import make_service

CONFIG = """
watch:
  - name: jobs
    poll_interval: 60s
    unavailable_after: 2m
    sim: {seed: 1}
"""
POISON = "poison-run"


class Jobs:
    """Three runs stepping every 10 s; ``crash`` makes run ``z`` exit (OOM, 137) at its next poll."""

    kind = "sim"

    def __init__(self) -> None:
        self.step = 0
        self.crash = False

    def poll(self, target, cursors, now):
        self.step += 6
        samples = []
        for run in ("a", POISON, "z"):
            state = "failed" if run == "z" and self.crash else "running"
            metrics = {"train/loss": 2.0, **({"exit_code": 137.0} if state == "failed" else {})}
            samples.append(Sample(now - 1, run, self.step, metrics, state=state))
        runs = [
            RunInfo(run=r, source="sim", state=s.state)
            for r, s in zip(("a", POISON, "z"), samples, strict=True)
        ]
        return PollResult(
            samples=samples, runs=runs, cursors={r: {"step": self.step} for r in ("a", POISON, "z")}
        )

    def close(self) -> None:
        pass


def poison_writes(service) -> None:
    def refuse(conn, cursor, statement, parameters, context, executemany):
        if statement.lstrip().upper().startswith("SELECT") or "savepoint" in statement.lower():
            return
        values = []
        for item in parameters if isinstance(parameters, list | tuple) else [parameters]:
            values.extend(
                item.values()
                if isinstance(item, dict)
                else item
                if isinstance(item, list | tuple)
                else [item]
            )
        if POISON in values:  # a row of the poisoned run (not a text that names it: the alert may)
            raise ValueError("Python int too large to convert to SQLite INTEGER")

    event.listen(service.sessions.kw["bind"], "before_cursor_execute", refuse)


def alerts(service) -> dict[tuple[str, str], tuple[str, str]]:
    with service.sessions() as s:
        return {(a.run_id, a.rule): (a.state, a.severity) for a in s.scalars(select(Alert))}


def test_one_runs_failing_write_sets_it_aside_and_the_others_page(db_url):
    clock = ManualClock(1_780_000_000.0)
    service, console = make_service(db_url, clock, CONFIG)
    source = Jobs()
    service.engine.sources = {"sim": source}
    service.engine.resume()
    web = TestClient(create_app(service), base_url="http://localhost")
    try:
        for _ in range(3):
            clock.advance(60)
            service.engine.poll("jobs")
        assert web.get("/readyz").status_code == 200
        poison_writes(service)
        source.crash = True
        clock.advance(60)
        report = service.engine.poll("jobs")  # before: raised, the whole poll rolled back
        assert set(report.set_aside) == {POISON}, report.set_aside
        assert "int too large" in report.set_aside[POISON]
        with service.sessions() as s:
            z = s.get(Run, "z")
            assert z.state == "failed" and z.last_step == 24, "the other runs are written"
        ready = web.get("/readyz")
        assert ready.status_code == 503, ready.text
        assert any("poison-run" in r and "not written" in r for r in ready.json()["reasons"]), ready.json()
        for _ in range(7):  # run_crashed's grace, and the write failing for longer than unavailable_after
            clock.advance(60)
            service.engine.poll("jobs")
            service.engine.check_health()
            service.dispatcher.run_once()
        fired = alerts(service)
        assert fired[("z", "run_crashed")] == ("firing", "critical"), fired
        assert fired[("jobs", "write_failing")] == ("firing", "critical"), fired
        told = console.getvalue()
        assert "run_crashed" in told and "write_failing" in told and POISON in told, told[-3000:]
        assert ("a", "progress_stalled") not in fired and ("a", "telemetry_gone") not in fired
    finally:
        service.stop()
