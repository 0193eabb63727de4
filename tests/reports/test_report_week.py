"""The report of a simulated week with known incidents matches the truth to the minute: goodput per
bucket, each incident's cost, detect/ack/resolve times, the OOMs grouped with their save pattern,
the flapping rule shown as noise. On SQLite and on the real PostgreSQL."""

from __future__ import annotations

import pytest
from sqlalchemy import create_engine, delete
from sqlalchemy.orm import Session

from monitor.reports import markdown
from monitor.reports.build import GpuSettings, build_report
from monitor.reports.model import BUCKETS
from monitor.reports.period import make, week_of, zone
from monitor.storage.models import GoodputSlot, Run
from tests import report_week as rw

MINUTE = 60.0
H = 3600.0


@pytest.fixture
def week(migrated_url: str):
    engine = create_engine(migrated_url)
    with Session(engine) as s:
        truth = rw.build(s)
    yield engine, truth
    engine.dispose()


def report(engine, gpus=None):
    with Session(engine) as s:
        p = week_of(rw.WEEK0 + 1, zone("UTC"))
        return build_report(s, p, now=rw.WEEK0 + 9 * rw.DAY, gpus=gpus or GpuSettings({"hero": rw.GPUS}, {}))


def by_rule(r, rule):
    return [p for p in r.pages if p.rule == rule]


def test_goodput_per_bucket_matches_the_truth_to_the_minute(week):
    engine, truth = week
    r = report(engine)
    (run,) = r.runs
    assert run.watched_hours == pytest.approx(7 * 24, abs=MINUTE / H)
    for bucket in BUCKETS:
        assert getattr(run.hours, bucket) * H == pytest.approx(truth.seconds[bucket], abs=MINUTE), bucket
    assert run.hours.stalled == pytest.approx(4.5, abs=1 / 60)
    assert run.gpus == rw.GPUS and run.gpus_from == "setting"
    assert run.gpu_hours.stalled == pytest.approx(4.5 * rw.GPUS, abs=rw.GPUS / 60)
    assert run.goodput == pytest.approx(truth.seconds["productive"] / (7 * 24 * H), abs=1e-4)
    assert "gpus: setting" in r.gpu_note


def test_each_incident_costs_what_it_lost_and_the_hang_is_the_costliest(week):
    engine, truth = week
    r = report(engine)
    hang = r.costliest[0]
    assert hang.kind == "stall" and hang.start == pytest.approx(truth.hang_start, abs=MINUTE)
    assert hang.lost_hours == pytest.approx(4.5, abs=1 / 60)
    assert hang.lost_gpu_hours == pytest.approx(4.5 * 703, abs=703 / 60)
    assert hang.rules == ["progress_stalled"]
    crash = r.costliest[1]
    assert crash.kind == "down" and crash.lost_hours == pytest.approx(2.0, abs=1 / 60)
    assert crash.rules == ["run_crashed"]
    slow = [i for i in r.incidents if "run_restarted" in i.rules and i.kind == "restart"]
    assert len(slow) == 1 and slow[0].lost_hours * H == pytest.approx(
        50 * MINUTE - 30 + slow[0].steps_redone * 30, abs=MINUTE
    )


def test_detect_ack_and_resolve_times_match(week):
    engine, truth = week
    r = report(engine)
    (stall,) = by_rule(r, "progress_stalled")
    assert stall.symptom_at == pytest.approx(truth.hang_start, abs=1)
    assert stall.detect_seconds == pytest.approx(15 * MINUTE, abs=1)
    assert stall.ack_seconds == pytest.approx(25 * MINUTE, abs=1) and stall.acked_by == "amy"
    assert stall.resolve_seconds == pytest.approx(4.5 * H + 30 + MINUTE, abs=1)
    assert stall.badput_hours == pytest.approx(4.5, abs=1 / 60)
    (restart,) = by_rule(r, "run_restarted")
    assert restart.detect_seconds == pytest.approx(3 * MINUTE, abs=1) and restart.acked_by == "bo"
    assert restart.ack_seconds == pytest.approx(17 * MINUTE, abs=1)
    (crash,) = by_rule(r, "run_crashed")
    assert crash.detect_seconds == pytest.approx(2 * MINUTE, abs=1) and crash.acked_by == "amy"
    assert crash.badput_hours == pytest.approx(2 + (10 * MINUTE - 30) / H + crash_rework(r) / H, abs=1 / 60)


def crash_rework(r) -> float:
    (inc,) = [i for i in r.incidents if "run_crashed" in i.rules and i.kind == "restart"]
    return inc.steps_redone * 30.0


def test_the_oom_kills_are_grouped_with_their_save_pattern(week):
    engine, truth = week
    r = report(engine)
    ooms = by_rule(r, "oom_kills")
    assert [p.symptom_at for p in ooms] == pytest.approx(truth.ooms, abs=1)
    (group,) = [g for g in r.recurring if g.rule == "oom_kills"]
    assert group.count == len(truth.ooms) and group.during_saves == group.count
    assert group.summary == f"oom_kills: {len(truth.ooms)} times, every ~3 h, each during a checkpoint save"
    assert group.every_seconds == pytest.approx(3.39 * H, abs=0.05 * H)


def test_the_flapping_rule_reads_as_noise_and_the_rest_do_not(week):
    engine, _ = week
    r = report(engine)
    q = {x.rule: x for x in r.quality}
    assert (
        q["loss_spike"].pages == 6 and q["loss_spike"].noise_share == 1.0 and q["loss_spike"].acked_share == 0
    )
    assert q["progress_stalled"].noise == 0 and q["progress_stalled"].acked_share == 1.0
    assert q["oom_kills"].noise == 0
    (flap,) = [g for g in r.recurring if g.rule == "loss_spike"]
    assert "likely noise" in flap.summary and "every ~40 min" in flap.summary


def test_without_a_gpu_count_the_report_says_hours_only(week):
    engine, _ = week
    r = report(engine, GpuSettings({}, {}))
    assert r.runs[0].gpu_hours is None and r.runs[0].gpus_from == "none" and r.gpu_totals is None
    assert "hours only" in r.gpu_note
    assert r.runs[0].hours.stalled == pytest.approx(4.5, abs=1 / 60)


def test_the_week_before_is_side_by_side_and_a_week_without_data_is_said(week):
    engine, _ = week
    r = report(engine)
    assert r.runs[0].previous is not None and r.runs[0].previous.total() == pytest.approx(2.0, abs=0.01)
    row = next(line for line in markdown.render(r).splitlines() if line.startswith(f"| {r.runs[0].name} |"))
    before = f"{r.runs[0].previous_goodput * 100:.1f}% of only 2.0 h watched → {r.runs[0].goodput * 100:.1f}%"
    assert before in row, f"the week before's goodput says it rests on 2 h, not a week: {row}"
    assert (
        "goodput: period before → this one: each run's goodput (productive ÷ watched, source blind left "
        "out) in the period before, Mon 16 Nov 00:00 to Mon 23 Nov 00:00, then in this period"
        in markdown.render(r)
    )
    with Session(engine) as s:
        empty = build_report(s, week_of(rw.WEEK0 - 30 * rw.DAY, zone("UTC")), now=rw.WEEK0)
    assert empty.runs == [] and empty.not_accounted == [], "the run did not exist yet: not listed"
    with Session(engine) as s:  # it existed, but nothing of it was accounted then (before the ledger)
        s.execute(delete(GoodputSlot).where(GoodputSlot.slot < rw.WEEK0 + rw.DAY))
        s.commit()
        monday = build_report(s, make(rw.WEEK0, rw.WEEK0 + rw.DAY, zone("UTC")), now=rw.WEEK0 + 9 * rw.DAY)
    assert monday.runs == [] and monday.not_accounted == [rw.RUN]
    with Session(engine) as s:  # a run that finished before a later week: nothing missing there
        run = s.get(Run, rw.RUN)
        run.state, run.last_seen_at = "finished", rw.WEEK0 + 7 * rw.DAY - H
        s.commit()
        later = build_report(s, week_of(rw.WEEK0 + 8 * rw.DAY, zone("UTC")), now=rw.WEEK0 + 16 * rw.DAY)
    assert later.runs == [] and later.not_accounted == [], "a run over before the week is not 'not accounted'"


def test_an_incident_across_sunday_and_monday_costs_each_week_only_its_part(migrated_url):
    """The hang starts Sunday 22:00 and lasts 4.5 h: 2 h of it in this week, 2.5 h in the next, as the
    stalled bucket counts it; never the whole 4.5 h in both (the costliest can't exceed the bucket)."""
    engine = create_engine(migrated_url)
    with Session(engine) as s:
        truth = rw.build(s, hang_at=7 * rw.DAY - 2 * H)
        weeks = [
            build_report(
                s, week_of(t, zone("UTC")), now=rw.WEEK0 + 9 * rw.DAY, gpus=GpuSettings({"hero": rw.GPUS}, {})
            )
            for t in (rw.WEEK0 + 1, rw.WEEK0 + 7 * rw.DAY + 1)
        ]
    engine.dispose()
    parts = []
    in_week = truth.seconds["stalled"]
    for r, expected in zip(weeks, (in_week, 4.5 * H - in_week), strict=True):
        (hang,) = [i for i in r.incidents if i.kind == "stall"]
        assert hang.start == pytest.approx(truth.hang_start, abs=1)
        assert hang.lost_hours * H == pytest.approx(expected, abs=MINUTE)
        assert hang.lost_hours <= r.runs[0].hours.stalled + 1 / 60, "no more than the stalled bucket"
        assert hang.lost_gpu_hours == pytest.approx(hang.lost_hours * rw.GPUS)
        assert hang.whole_lost_hours == pytest.approx(4.5, abs=1 / 60)
        md = markdown.render(r)
        assert f"{hang.lost_hours:.1f} h lost" in md and "of 4.5 h in all" in md, md
        parts.append(hang.lost_hours)
    assert parts[0] == pytest.approx(2.0, abs=2 / 60) and sum(parts) == pytest.approx(4.5, abs=1 / 60)
