"""The push source's pieces without a server: what an exit means, the spool's whole lines, the cursor."""

from __future__ import annotations

import math

import pytest

from monitor.settings import Settings
from monitor.sources.base import Target
from monitor.sources.push_config import PushTarget
from monitor.sources.push_source import PushSource
from monitor.sources.push_spool import SpoolWriter, line, run_file
from monitor.web.api.ingest import PushedEvent, exit_sample


@pytest.mark.parametrize(
    ("code", "cause", "state", "exit_code"),
    [
        (0, "exit", "finished", 0),
        (3, "exit", "failed", 3),
        (-9, "exit", "failed", 137),  # Python's returncode for a signal
        (None, "signal 9", "killed", 137),
        (None, "SIGTERM", "killed", 143),
        (None, "signal 11", "failed", 139),
        (0, "oom-killed", "failed", 137),  # a wrapper that swallowed the kill is not a success
        (None, "exit", "failed", None),
    ],
)
def test_what_an_exit_means(code, cause, state, exit_code):
    assert exit_sample(PushedEvent(kind="exit", exit_code=code, cause=cause)) == (state, exit_code)


def test_the_source_reads_whole_lines_from_its_cursor_and_waits_for_a_half_written_one(tmp_path):
    writer = SpoolWriter(tmp_path)
    writer.append("w", "job/1", [line(100.0, "job/1", s, {"loss": 1.0 / (s + 1)}, None) for s in range(3)])
    src = PushSource(Settings(ingest_dir=tmp_path))
    target = Target("w", PushTarget())
    first = src.poll(target, {}, 200.0)
    assert [s.step for s in first.samples] == [0, 1, 2]
    assert [r.run for r in first.runs] == ["push:w/job/1"]
    cursors = first.cursors
    # half a line: nothing read, the cursor stays; its end arrives: read once
    half = line(101.0, "job/1", 3, {"loss": float("nan")}, None)
    with run_file(tmp_path, "w", "job/1").open("ab") as f:
        f.write(half[:10])
    second = src.poll(target, cursors, 201.0)
    assert second.samples == [] and second.cursors == cursors
    with run_file(tmp_path, "w", "job/1").open("ab") as f:
        f.write(half[10:])
    third = src.poll(target, second.cursors, 202.0)
    assert [s.step for s in third.samples] == [3]
    assert math.isnan(third.validated().samples[0].metrics["loss"])  # NaN came through
    assert src.poll(target, third.cursors, 203.0).samples == []


def test_the_rate_bucket_takes_a_burst_then_the_rate_and_says_how_long_to_wait():
    from monitor.web.api.ingest_budget import Bucket

    b = Bucket(rate=100.0, burst=1000.0, level=1000.0, at=0.0)
    assert b.take(1000, 0.0) is None  # the burst at once
    assert b.take(50, 0.1) == 1.0  # 10 came back: 40 short, 0.4 s, answered as at least 1 s
    assert b.take(50, 0.5) is None  # 50 came back by then
    assert b.take(10_000, 0.5) == 100.0  # more than the burst could ever hold: wait for it anyway


def test_each_watch_has_its_own_token_and_the_api_token_is_none_of_them(tmp_path):
    from monitor.config.loader import parse_config
    from monitor.web.api.ingest import IngestDoor

    cfg = parse_config(
        "watch:\n  - {name: a, push: {token_env: A_TOKEN}}\n  - {name: b, push: {token_env: B_TOKEN}}\n"
        "  - {name: c, push: {token_env: C_TOKEN}}\n",
        "hw.yaml",
    )
    env = {"A_TOKEN": "a" * 40, "B_TOKEN": "b" * 40, "C_TOKEN": "short"}
    door = IngestDoor.from_watches(cfg.watch, tmp_path, env)
    assert door.tokens == {"a": "a" * 40, "b": "b" * 40}, "a token under 32 characters opens nothing"


def test_a_pushed_alert_goes_from_the_door_through_the_spool_to_the_rules_input(tmp_path):
    from pydantic import ValidationError

    from monitor.samples import ALERT_METRIC, JobAlert
    from monitor.web.api.ingest import IngestBody, _lines

    body = IngestBody(
        run="job",
        events=[
            {
                "kind": "alert",
                "t": 100.0,
                "title": " Shard corrupt ",
                "text": "17",
                "level": "ERROR",
                "wait": 300,
            },
            {"kind": "resolve", "t": 101.0, "title": "Shard corrupt"},
        ],
    )
    SpoolWriter(tmp_path).append("w", "job", _lines(body, 100.0))
    got = PushSource(Settings(ingest_dir=tmp_path)).poll(Target("w", PushTarget()), {}, 200.0).validated()
    assert [s.alert for s in got.samples] == [
        JobAlert("Shard corrupt", "17", "error", 300.0),
        JobAlert("Shard corrupt", resolved=True),
    ]
    assert [s.metrics[ALERT_METRIC] for s in got.samples] == [3.0, 0.0]
    assert got.logged["push:w/job"] == [ALERT_METRIC]
    for bad, field in [
        ({"kind": "alert", "title": "x" * 65}, "title"),
        ({"kind": "alert", "title": "t", "text": "x" * 2001}, "text"),
        ({"kind": "alert", "title": "t", "level": "fatal"}, "level"),
        ({"kind": "alert", "title": "t", "wait": -1}, "wait"),
        ({"kind": "alert"}, "needs a title"),
        ({"kind": "started", "title": "t"}, "not fields of a started event"),
    ]:
        with pytest.raises(ValidationError, match=field):
            PushedEvent(**bad)


def test_a_run_id_over_200_characters_from_a_source_is_logged_once_not_dropped_in_silence(caplog):
    from monitor.samples import RunInfo, Sample
    from monitor.sources.base import PollResult

    long = "custom:" + "p" * 250
    result = PollResult(
        samples=[Sample(t=1.0, run=long, metrics={"loss": 1.0})], runs=[RunInfo(long, "custom")]
    )
    with caplog.at_level("WARNING", logger="monitor.sources.base"):
        assert result.validated().runs == [] and result.validated().samples == []
    said = [r.getMessage() for r in caplog.records if "characters (at most 200)" in r.getMessage()]
    assert len(said) == 1 and said[0].startswith("run custom:ppp"), said


def test_a_job_that_never_reports_its_state_is_shown_without_one_never_paged_blind(tmp_path, monkeypatch):
    """A job script that pushes its loss but never runs under ``herowatch emit run`` (no started, no
    exit) is a healthy run: its state is unknown and said so, no ``watching_blind`` about it."""
    from sqlalchemy import select

    from alerts.clock import ManualClock
    from monitor.config.loader import parse_config
    from monitor.service import build_service
    from monitor.storage.models import Alert

    monkeypatch.setenv("HERO_INGEST_TOKEN", "x" * 32)
    cfg = parse_config(
        "watch:\n  - name: w\n    poll_interval: 60s\n    push: {token_env: HERO_INGEST_TOKEN}\n", "t.yaml"
    )
    clock = ManualClock(1_780_000_000.0)
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'hw.db'}", ingest_dir=tmp_path / "spool")
    service = build_service(cfg, settings, clock, auto_migrate=True)
    service.engine.resume()
    spool = SpoolWriter(tmp_path / "spool")
    try:
        step = 0
        for _ in range(180):  # three hours, a step every 10 s, a poll a minute
            lines = []
            for i in range(6):
                step += 1
                t = clock.time() + i * 10.0
                lines.append(line(t, "job", step, {"train/loss": 3.0 - step * 1e-4}, None))
            spool.append("w", "job", lines)
            clock.advance(60)
            service.engine.poll("w")
        with service.sessions() as s:
            raised = [(a.rule, a.labels.get("input")) for a in s.scalars(select(Alert))]
    finally:
        service.stop()
    assert raised == [], f"a healthy pushed run paged: {raised}"
