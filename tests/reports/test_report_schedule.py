"""Scheduled reports on a manual clock, with the Slack stand-in: due once per period, caught up after
downtime, never sent twice by a second replica, tried again after a failed send; and when they are due."""

from __future__ import annotations

import json
import re
import threading
from datetime import UTC, datetime
from http.server import ThreadingHTTPServer
from zoneinfo import ZoneInfo

import pytest
from sqlalchemy import create_engine

from alerts.clock import ManualClock
from monitor.config.cadence import parse_every
from monitor.config.errors import ConfigError
from monitor.config.loader import parse_config
from monitor.reports.cadence import latest_fire, period_of
from monitor.reports.schedule import STALE, ReportJob
from monitor.reports.slack_post import fit
from monitor.storage import reports_sent
from monitor.storage.db import make_sessionmaker
from tests import report_week as rw
from tests.standins.slack import DEFAULT_TOKEN, SlackStandin

CHANNEL = "C0REPORTS"


def ts(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


@pytest.mark.parametrize(
    ("every", "tz", "now", "fire", "start", "end"),
    [
        ("mon 09:00", "UTC", "2026-12-02T12:00", "2026-11-30T09:00", "2026-11-23T00:00", "2026-11-30T00:00"),
        ("mon 09:00", "UTC", "2026-11-30T08:59", "2026-11-23T09:00", "2026-11-16T00:00", "2026-11-23T00:00"),
        (
            "monday 09:00",
            "UTC",
            "2026-11-30T09:00",
            "2026-11-30T09:00",
            "2026-11-23T00:00",
            "2026-11-30T00:00",
        ),
        ("09:30", "UTC", "2026-12-02T08:00", "2026-12-01T09:30", "2026-11-30T00:00", "2026-12-01T00:00"),
        # Berlin's Monday 09:00 is 08:00 UTC in winter; its week starts at Sunday 23:00 UTC
        (
            "mon 09:00",
            "Europe/Berlin",
            "2026-12-02T12:00",
            "2026-11-30T08:00",
            "2026-11-22T23:00",
            "2026-11-29T23:00",
        ),
    ],
)
def test_which_period_is_due(every, tz, now, fire, start, end):
    e, zone = parse_every(every), ZoneInfo(tz)
    at = latest_fire(e, zone, ts(now))
    assert at == ts(fire)
    p = period_of(e, zone, at)
    assert (p.start, p.end) == (ts(start), ts(end))


@pytest.mark.parametrize("bad", ["monday", "mon 9", "25:00", "mon 09:61", "xyz 09:00", ""])
def test_a_bad_schedule_is_a_config_error_with_its_place(bad):
    text = f"""
watch:
  - {{name: hero, sim: {{run: hero-1}}}}
receivers:
  - {{name: oncall, kind: console}}
route: {{receiver: oncall}}
reports:
  - {{every: "{bad}", receiver: oncall}}
"""
    with pytest.raises(Exception, match=r"reports\[0\]\.every|reports.0.every"):
        parse_config(text, "test.yaml")


def config(slack: SlackStandin) -> str:
    return f"""
watch:
  - {{name: hero, gpus: 703, sim: {{run: hero-1}}}}
receivers:
  - {{name: oncall, kind: slack, channel: {CHANNEL}, base_url: '{slack.api_url}', timeout: 5s}}
route: {{receiver: oncall}}
reports:
  - {{every: "mon 09:00", timezone: UTC, receiver: oncall}}
"""


def reports(slack: SlackStandin) -> list:
    return [m for m in slack.roots(CHANNEL) if m.text.startswith("herowatch report")]


def test_once_per_period_caught_up_after_downtime_and_never_twice(migrated_url):
    engine = create_engine(migrated_url)
    with make_sessionmaker(engine)() as s:
        rw.build(s, lead=0.0)  # watched from the week's first minute
    with SlackStandin(channels=[CHANNEL]) as slack:
        cfg = parse_config(config(slack), "test.yaml")
        clock = ManualClock(rw.WEEK0 + 7 * rw.DAY + 8 * rw.H)  # Monday 08:00 after the week
        env = {"SLACK_BOT_TOKEN": DEFAULT_TOKEN}
        a = ReportJob(cfg, make_sessionmaker(engine), clock, env)
        b = ReportJob(cfg, make_sessionmaker(engine), clock, env)
        b.worker = "replica-b"
        assert a.run_once() == 0 and reports(slack) == [], "the week before had no data: nothing to send"
        clock.advance(3 * 86400)  # herowatch was down at Monday 09:00; back on Thursday
        slack.fail(500, times=10, methods=["chat.postMessage"])
        assert a.run_once() == 0 and reports(slack) == [], "Slack answers 500: not sent"
        assert slack.calls_to("chat.postMessage"), "a claimed the period at once and tried"
        with make_sessionmaker(engine)() as s:
            (row,) = reports_sent.sent(s, cfg.reports[0].key())
            assert row.claimed_by == a.worker and row.sent_at is None and "500" in (row.error or ""), (
                row.error
            )
        slack.clear_faults()
        assert b.run_once() == 0, "the failed claim is still a's for a while"
        clock.advance(STALE + 1)
        assert b.run_once() == 1 and a.run_once() == 0 and b.run_once() == 0
        (post,) = reports(slack)
        assert "week of 2026-11-23" in post.text and "Goodput " in post.text
        assert "oom_kills: " in post.text and "each during a checkpoint save" in post.text
        files = [f for m in slack.thread(CHANNEL, post.ts) for f in m.files]
        assert sorted(f["name"] for f in files) == ["goodput.png", "incidents.png"], files
        clock.advance(4 * 86400)  # the next Monday 09:00: the next week (no data since): nothing
        assert a.run_once() == 0 and b.run_once() == 0 and len(reports(slack)) == 1
    engine.dispose()


def test_a_webhook_gets_the_reports_json_once(migrated_url):
    from tests.test_webhook import Hook

    Hook.answers, Hook.got = [(503, {})], []
    server = ThreadingHTTPServer(("127.0.0.1", 0), Hook)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    engine = create_engine(migrated_url)
    try:
        with make_sessionmaker(engine)() as s:
            rw.build(s, lead=0.0)
        url = f"http://127.0.0.1:{server.server_address[1]}/hook"
        cfg = parse_config(
            "watch:\n  - {name: hero, gpus: 703, sim: {run: hero-1}}\n"
            f"receivers:\n  - {{name: hook, kind: webhook, url: '{url}'}}\nroute: {{receiver: hook}}\n"
            "reports:\n  - {every: '09:00', receiver: hook, watch: hero}\n",
            "test.yaml",
        )
        clock = ManualClock(rw.WEEK0 + 2 * rw.DAY + 10 * rw.H)  # Wednesday 10:00: Tuesday is due
        job = ReportJob(cfg, make_sessionmaker(engine), clock, {})
        assert job.run_once() == 0 and len(Hook.got) == 1, "503: tried, not sent"
        clock.advance(STALE + 1)
        assert job.run_once() == 1 and job.run_once() == 0
        body = Hook.got[-1][1]
        assert body["period"]["start"] == rw.WEEK0 + rw.DAY and body["period"]["end"] == rw.WEEK0 + 2 * rw.DAY
        assert body["runs"][0]["hours"]["stalled"] == pytest.approx(4.5, abs=1 / 60), "Tuesday's hang"
        assert len(Hook.got) == 2
    finally:
        server.shutdown()
        engine.dispose()


def test_run_names_in_the_scheduled_post_are_escaped_and_ping_nobody(migrated_url):
    engine = create_engine(migrated_url)
    with make_sessionmaker(engine)() as s:
        rw.build(s, lead=0.0, run="push:hero/<!channel>")  # a pushed run may call itself anything
    with SlackStandin(channels=[CHANNEL]) as slack:
        cfg = parse_config(config(slack), "test.yaml")
        clock = ManualClock(rw.WEEK0 + 7 * rw.DAY + 10 * rw.H)
        job = ReportJob(cfg, make_sessionmaker(engine), clock, {"SLACK_BOT_TOKEN": DEFAULT_TOKEN})
        assert job.run_once() == 1
        (post,) = reports(slack)
        mrkdwn = json.dumps(post.blocks)
        assert "&lt;!channel&gt;" in post.text and "&lt;!channel&gt;" in mrkdwn
        assert "<!" not in post.text and "<!" not in mrkdwn, "no special mention reaches Slack"
    engine.dispose()


def test_a_cut_message_never_ends_inside_an_escape_or_a_link():
    name = "&lt;!channel&gt;" * 3
    for n in range(20, 60):
        cut = fit(f"• Costliest: stall of {name} <https://hw.example/reports|The whole report>", n)
        assert len(cut) <= n and cut.endswith("…")
        assert not re.search(r"&[a-z]*…$", cut) and cut.count("<") == cut.count(">"), cut
    lines = "\n".join(f"• line {i} of the summary" for i in range(200))
    assert fit(lines, 2900).endswith("summary\n…"), "cut at the end of a line"


@pytest.mark.parametrize(
    ("kind", "extra"),
    [("pagerduty", ""), ("alertmanager", ", urls: ['http://127.0.0.1:9']"), ("dashboard", "")],
)
def test_a_report_to_a_receiver_that_cannot_take_one_is_a_config_error(kind, extra):
    text = f"""watch:
  - {{name: hero, sim: {{run: hero-1}}}}
receivers:
  - {{name: oncall, kind: console}}
  - {{name: pager, kind: {kind}{extra}}}
route: {{receiver: oncall}}
reports:
  - {{every: "mon 09:00", receiver: oncall}}
  - {{every: "mon 09:00", receiver: pager}}
"""
    with pytest.raises(ConfigError) as err:
        parse_config(text, "test.yaml")
    (problem,) = err.value.problems
    assert (problem.line, problem.field) == (9, "reports[1].receiver")
    assert f"'pager' is a {kind} receiver, which cannot take a report" in problem.message
    assert "slack, webhook, console" in problem.message
    assert "test.yaml:9: reports[1].receiver" in str(err.value)
