"""The whole cycle on both databases: a simulated stall fires, notifies once, resolves; a restart of
herowatch resumes without notifying again; an unreadable source is never a stalled run."""

from __future__ import annotations

from sqlalchemy import func, select

from monitor.sources.base import PollResult
from monitor.storage.models import Alert, AlertTransition, Notification, Run
from tests.helpers import make_service, sim_id, tick


def _count(service, model, *where):
    with service.sessions() as s:
        return s.scalar(select(func.count()).select_from(model).where(*where))


def test_stall_fires_notifies_once_and_resolves(db_url, clock):
    service, out = make_service(db_url, clock)
    service.engine.resume()
    tick(service, clock, 20 * 60)
    assert "FIRING" not in out.getvalue(), "no alert before the stall has lasted the 15 min floor"
    tick(service, clock, 8 * 60)  # the stall began at 10m: 28m in, 18 min without a step
    text = out.getvalue()
    assert text.count("FIRING CRITICAL progress_stalled run=hero-a") == 1
    assert "hero-b" not in text, "the healthy run raised nothing"
    tick(service, clock, 20 * 60)  # the stall ends at 40m
    text = out.getvalue()
    assert text.count("RESOLVED CRITICAL progress_stalled run=hero-a") == 1
    with service.sessions() as s:
        alert = s.scalars(select(Alert).where(Alert.rule == "progress_stalled")).one()
        assert alert.state == "resolved" and alert.run_id == sim_id("hero-a")
        states = [
            (t.from_state, t.to_state)
            for t in s.scalars(
                select(AlertTransition)
                .where(AlertTransition.alert_id == alert.id)
                .order_by(AlertTransition.id)
            )
        ]
        assert states == [("inactive", "firing"), ("firing", "resolved")]
        assert (
            s.scalar(select(func.count()).select_from(Notification).where(Notification.status == "sent")) == 2
        )
        run = s.get(Run, sim_id("hero-a"))
        assert run.last_step and run.last_step > 60 and run.state == "running"
    service.stop()


def test_restart_does_not_notify_a_firing_alert_again(db_url, clock):
    service, out = make_service(db_url, clock)
    service.engine.resume()
    tick(service, clock, 28 * 60)
    assert out.getvalue().count("FIRING") == 1
    service.stop()

    again, out2 = make_service(db_url, clock)  # a new process on the same database
    again.engine.resume()
    tick(again, clock, 5 * 60)
    assert "FIRING" not in out2.getvalue(), "the firing alert was restored, not raised anew"
    assert _count(again, Alert, Alert.state == "firing") == 1
    tick(again, clock, 15 * 60)
    assert out2.getvalue().count("RESOLVED CRITICAL progress_stalled run=hero-a") == 1
    assert _count(again, Alert) == 1, "the same alert instance resolved: no duplicate"
    again.stop()


class Down:
    kind = "sim"

    def poll(self, target, cursors, now):
        return PollResult(error="connection refused")

    def close(self):
        pass


def test_an_unreadable_source_is_reported_as_such_not_as_a_stall(db_url, clock):
    service, out = make_service(db_url, clock)
    service.engine.resume()
    tick(service, clock, 5 * 60)
    real = service.engine.sources["sim"]
    service.engine.sources["sim"] = Down()
    tick(service, clock, 60 * 60)  # an hour without data
    text = out.getvalue()
    assert "progress_stalled" not in text, "an outage must not page as a stalled run"
    assert text.count("FIRING WARNING source_unavailable run=hero-a") == 1
    # an hour is past the grace (unavailable_page_after, 10m): the outage escalates once, critical
    assert text.count("FIRING CRITICAL source_down run=hero-a") == 1, "a long outage must reach a human"
    with service.sessions() as s:
        assert "connection refused" in s.get(Run, sim_id("hero-a")).source_error
    service.engine.sources["sim"] = real
    tick(service, clock, 2 * 60)
    assert "RESOLVED" not in out.getvalue(), "an outage ends after the source answered for a while"
    tick(service, clock, 10 * 60)
    text = out.getvalue()
    # the outage is one incident: its warning and its escalation end together, after the settling
    assert text.count("RESOLVED WARNING source_unavailable run=hero-a") == 1
    assert text.count("RESOLVED CRITICAL source_down run=hero-a") == 1
    assert "progress_stalled" not in text, "the backlog read after the outage shows the run kept stepping"
    service.stop()


def test_a_brief_outage_stays_one_quiet_warning_even_while_it_settles(db_url, clock):
    """8 minutes down (past the 2m warning, short of the 10m grace), then 8 of settling: 16 minutes
    from its start to its end, and still no page: the escalation counts the failing, not the settling."""
    service, out = make_service(db_url, clock)
    service.engine.resume()
    tick(service, clock, 5 * 60)
    real = service.engine.sources["sim"]
    service.engine.sources["sim"] = Down()
    tick(service, clock, 8 * 60)
    service.engine.sources["sim"] = real
    tick(service, clock, 20 * 60)
    text = out.getvalue()
    assert text.count("FIRING WARNING source_unavailable run=hero-a") == 1
    assert text.count("RESOLVED WARNING source_unavailable run=hero-a") == 1
    assert "source_down" not in text, text
    service.stop()
