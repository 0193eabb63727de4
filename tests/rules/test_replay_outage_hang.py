"""A hang older than a source outage, in replay and in the outage model (docs/reliability.md, "a hang that
began before an outage"): a run stepping every 10 s stops at minute 20, its W&B source fails from minute
30 to 40. The silence was seen for 10 minutes while the source answered: it pages at the first clean
answer, not once the outage settled and its backlog had its time. A run that steps through the outage,
or whose hang began near or during it, waits as before."""

from __future__ import annotations

import pytest

from monitor.engine.source_health import MIN_MARGIN, Settle, SourceHealth, waits_for_backlog
from monitor.samples import Sample
from monitor.traces.replay import replay
from tests.rules.helpers_rules import T0, hero
from tests.rules.test_replay_flaky_outage import events_of, flaky

MIN = 60.0
RUN = "hero-oh"


def trace(hang_at: float | None, outage: str = "steady", end: float = 80 * MIN) -> list[Sample]:
    """Steps every 10 s until ``hang_at`` (None: to the end), W&B failing from 30 to 40 minutes (a poll a
    minute; ``flaky``: answering now and then with no new row), the rows of the outage read after it."""
    stop = end if hang_at is None else hang_at
    rows = [
        Sample(T0 + t, RUN, int(t // 10), {"train/loss": 2.0}, "running", "wandb")
        for t in range(0, int(stop), 10)
    ]
    polls = [Sample(T0 + m * MIN, RUN, state="running", source="wandb") for m in range(int(stop // MIN), 80)]
    start, back = T0 + 30 * MIN, T0 + 40 * MIN
    if outage == "flaky":
        failing, back = flaky(RUN, "wandb", start, minutes=10)
    else:
        failing = [
            Sample(t, RUN, source="wandb", source_error="HTTP 503")
            for t in (start + m * MIN for m in range(10))
        ]
    seen = rows + polls
    before = [s for s in seen if s.t < start]
    during = [s for s in rows if start <= s.t < back]  # the backlog: read once the source answers
    after = [s for s in seen if s.t >= back]
    return (
        sorted(before, key=lambda s: s.t)
        + failing
        + [Sample(back, RUN, state="running", source="wandb")]
        + during
        + sorted(after, key=lambda s: s.t)
    )


def stall_at(samples: list[Sample]) -> list[float]:
    return [(e.t - T0) / MIN for e in events_of(replay(samples, hero()), "progress_stalled")]


def test_a_hang_older_than_the_outage_pages_at_the_first_clean_answer():
    assert stall_at(trace(hang_at=20 * MIN)) == [40.0]  # was 50: the settling (10 min), then the backlog


def test_the_same_hang_without_an_outage_pages_after_the_stall_limit():
    samples = [s for s in trace(hang_at=20 * MIN) if s.source_error is None]
    (fired,) = stall_at(samples)
    assert 34.5 <= fired <= 36, fired  # its last step at 19:50, the 15-minute limit


def test_a_flaky_outage_pages_an_older_hang_when_the_source_first_answers_with_no_new_step():
    assert stall_at(trace(hang_at=20 * MIN, outage="flaky")) == [37.0]  # the outage's 7th minute answers


@pytest.mark.parametrize("outage", ["steady", "flaky"])
def test_a_run_stepping_through_the_outage_with_its_backlog_after_it_does_not_page(outage):
    assert stall_at(trace(hang_at=None, outage=outage)) == []


@pytest.mark.parametrize("hang_min", [28, 32])
def test_a_hang_near_or_during_the_outage_waits_for_the_settling_and_the_backlog(hang_min):
    (fired,) = stall_at(trace(hang_at=hang_min * MIN))
    assert fired >= 50, fired  # as before: the outage may explain it until it settled


def test_the_outage_carries_its_start_the_last_clean_answer_before_it():
    health = SourceHealth()
    for m in range(30):
        health.polled("wandb", m * MIN)
    for m in range(30, 60):  # 30 minutes failing: settled after 10 clean ones, the backlog's wait is 15
        health.polled("wandb", m * MIN, "HTTP 503")
    health.polled("wandb", 60 * MIN)
    assert health.settling(60 * MIN) == {"wandb": Settle(60 * MIN, 29 * MIN)}
    assert health.settling(72 * MIN) == {"wandb": Settle(60 * MIN, 29 * MIN)}  # waiting for the backlog
    assert health.settling(75 * MIN) == {}
    for m in range(75, 80):
        health.polled("wandb", m * MIN)
    health.polled("wandb", 80 * MIN, "HTTP 503")  # a new outage: its own start
    health.polled("wandb", 81 * MIN)
    assert health.settling(81 * MIN) == {"wandb": Settle(81 * MIN, 79 * MIN)}


def test_waits_for_backlog_only_a_silence_the_outage_can_explain():
    back = [Settle(40 * MIN, 29 * MIN)]
    assert not waits_for_backlog(41 * MIN, 10.0, back), "stepped since the source answers: judged"
    assert waits_for_backlog(28 * MIN, 10.0, back), "stepped a minute before the outage: its backlog may come"
    assert waits_for_backlog(29 * MIN - MIN_MARGIN, 10.0, back)
    assert not waits_for_backlog(20 * MIN, 10.0, back), "silent 9 minutes before the outage: not the outage's"
    assert not waits_for_backlog(20 * MIN, 100.0, back), "5 steps at 100 s a step: 8m20s"
    assert waits_for_backlog(22 * MIN, 100.0, back), "5 steps at 100 s a step: 8m20s"
    assert waits_for_backlog(20 * MIN, None, back), "no cadence known: waits as for any outage"
    both = [*back, Settle(40 * MIN, 15 * MIN)]
    assert not waits_for_backlog(20 * MIN, 10.0, both), "a feed's sources: the latest start"


def test_a_stall_pending_when_the_outage_began_keeps_its_clock_through_it():
    """With ``for: 10m`` the hang of minute 12 is pending from 27 (the 15-minute limit) and due at 37,
    inside the outage: it fires at the first clean answer, its pending time counted through the outage."""
    rules = hero(progress_stalled={"for": "10m"})
    result = replay(trace(hang_at=12 * MIN), rules)
    (pending,) = events_of(result, "progress_stalled", "pending")
    (fired,) = events_of(result, "progress_stalled")
    assert (pending.t - T0) / MIN == pytest.approx(27, abs=0.5)
    assert (fired.t - T0) / MIN == 40.0  # was 50, once the outage had settled
