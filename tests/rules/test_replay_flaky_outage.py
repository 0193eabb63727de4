"""A flaky outage in replay (issue 26, point 4), on the real llm.c log: 40 minutes during which W&B
mostly fails but now and then answers (state ``running``, no new history), after which the backlog of
steps arrives at once with their own timestamps. One ``source_unavailable`` message, no stall page;
the same for a flaky Prometheus. A run that really hung during the outage still pages, once the
backlog had its chance to arrive."""

from __future__ import annotations

import pytest

from monitor.samples import Sample
from monitor.traces.replay import replay
from monitor.traces.trace import TraceWriter, read_trace
from tests.rules.helpers_rules import T0, hero
from tests.rules.real_scenarios import Scenario

MIN = 60.0
ANSWERS = {7, 13, 14, 22, 30, 31, 32}  # minutes into the outage at which the API answers anyway


def flaky(run: str, source: str, start: float, minutes: int = 40) -> tuple[list[Sample], float]:
    """A poll a minute from ``start``: an error, or (at ``ANSWERS``) a clean answer with no news."""
    polls = []
    for m in range(minutes):
        t = start + m * MIN
        if m in ANSWERS:
            polls.append(Sample(t, run, state="running", source=source))
        else:
            polls.append(Sample(t, run, source=source, source_error="HTTP 502 Bad Gateway"))
    return polls, start + minutes * MIN


def wandb_outage(backlog: str, hang: bool = False) -> tuple[list[Sample], float, float]:
    sc = Scenario(
        last_step=12000, hang_after_step=7500 if hang else None, watch_after=2 * 3600 if hang else 0
    )
    rows = sc.build()
    start = sc.step_at[7400] + 5.0  # the schedule is known by then (saves every 1000 steps)
    polls, back = flaky(sc.run, "wandb", start)
    before = [s for s in rows if s.t < start]
    during = [s for s in rows if start <= s.t < back and s.step is not None]
    after = [s for s in rows if s.t >= back]
    came_back = Sample(back, sc.run, state="running", source="wandb")
    if backlog == "at once":  # read when the outage ends, with their own (older) times
        trace = before + polls + [came_back] + during + after
    else:  # "in order": each row where its own time puts it, between the failing polls
        trace = before + sorted(polls + during, key=lambda s: s.t) + [came_back] + after
    return trace, start, back


def events_of(result, rule: str, state: str = "firing") -> list:
    return [e for e in result.events if e.rule == rule and e.state == state]


@pytest.mark.parametrize("backlog", ["at once", "in order"])
def test_a_flaky_wandb_outage_with_a_backlog_is_one_message_and_no_stall_page(backlog):
    trace, start, back = wandb_outage(backlog)
    result = replay(trace, hero())
    (down,) = events_of(result, "source_unavailable")
    assert start < down.t <= start + 5 * MIN
    (up,) = events_of(result, "source_unavailable", "resolved")
    assert back <= up.t <= back + 11 * MIN  # after ten minutes of clean answers
    assert events_of(result, "progress_stalled") == []
    assert [e for e in result.firing("critical")] == []


def test_the_backlog_survives_a_trace_file(tmp_path):
    trace, _, _ = wandb_outage("at once")
    path = tmp_path / "flaky.jsonl"
    with TraceWriter(path) as w:
        w.write_all(trace)
    again = read_trace(path)  # older rows right after an outage are a backlog, not an order error
    assert len(again) == len(trace)
    assert events_of(replay(again, hero()), "progress_stalled") == []


def test_a_run_that_hung_during_the_outage_still_pages_after_it():
    trace, start, back = wandb_outage("at once", hang=True)
    result = replay(trace, hero())
    (stall,) = events_of(result, "progress_stalled")
    assert back < stall.t <= back + 45 * MIN  # the backlog's grace (the outage's length), then the stall
    (down,) = events_of(result, "source_unavailable")


def test_a_flaky_prometheus_outage_is_one_message():
    run = "llmc-hero"
    scrapes = [
        Sample(T0 + m * MIN, run, metrics={"oom_kills_total": 0.0}, source="prometheus") for m in range(180)
    ]
    start = T0 + 60 * MIN
    polls, back = flaky(run, "prometheus", start)
    polls = [
        Sample(p.t, run, metrics={"oom_kills_total": 0.0}, source="prometheus")
        if p.source_error is None
        else p
        for p in polls
    ]
    trace = [s for s in scrapes if s.t < start] + polls + [s for s in scrapes if s.t >= back]
    rows = Scenario(last_step=5000).build()
    result = replay(sorted(trace + rows, key=lambda s: s.t), hero())
    assert len(events_of(result, "source_unavailable")) == 1
    assert len(events_of(result, "source_unavailable", "resolved")) == 1
    assert result.firing("critical") == []
