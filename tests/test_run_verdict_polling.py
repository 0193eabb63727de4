"""The run's health colour when herowatch has not polled it for a while: a run still going is a warning
(nothing would page if it stalled), a run that is over is just over (a finished run whose watch left the
config must not show "Not polled" for ever)."""

from __future__ import annotations

from monitor.storage.models import Run
from monitor.web.status import assess

NOW = 1_780_000_000.0
DAY = 86400.0


def run(state: str) -> Run:
    return Run(
        id="wandb:lab/hero/abc",
        watch="hero",
        source="wandb",
        state=state,
        last_step=1200,
        last_step_at=NOW - 4 * DAY,
        last_seen_at=NOW - 4 * DAY,
        last_polled_at=NOW - 4 * DAY,
        first_seen_at=NOW - 10 * DAY,
        stats={},
    )


def test_a_running_run_not_polled_for_days_is_a_warning():
    v = assess(run("running"), [], None, NOW, 60.0)
    assert v.health == "warning" and v.problem.startswith("Not polled for 4d"), v


def test_a_finished_run_not_polled_is_ended_not_a_warning():
    for state in ("finished", "crashed"):
        v = assess(run(state), [], None, NOW, 60.0)
        assert "Not polled" not in v.problem, (state, v)
    assert assess(run("finished"), [], None, NOW, 60.0).health == "ended"


def test_a_run_that_is_over_shows_no_rate_and_no_eta():
    """The run list's steps/s and ETA are about a run going on: a finished run's last rate read as an
    ETA of weeks to a target it will never reach."""
    from monitor.web.status import run_fields

    stats = {"steps_per_second": 0.08, "eta_seconds": 30 * DAY}
    going = run_fields(run("running"), stats, [], None, NOW - 4 * DAY + 30, 60.0)
    assert going["steps_per_second"] == 0.08 and going["eta_seconds"] == 30 * DAY
    for state in ("finished", "crashed"):
        over = run_fields(run(state), stats, [], None, NOW, 60.0)
        assert over["eta_seconds"] is None and over["steps_per_second"] == 0.0, (state, over)
