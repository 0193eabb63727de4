"""Live: two ``herowatch serve`` replicas on PostgreSQL share a weekly report schedule; when it comes
due, the Slack stand-in gets exactly one post with its two pictures, and restarting either replica
sends nothing again. The database holds last week's simulated hero run (tests/report_week.py)."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

from monitor.reports.period import last_full_week, zone
from monitor.storage.db import make_engine, make_sessionmaker
from tests import report_week as rw
from tests.live.slack_support import CHANNEL, slack_stack
from tests.live.support import wait_for


def test_two_replicas_post_the_due_report_once_and_not_again_after_restarts(tmp_path, pg_url):
    now = time.time()
    fire = datetime.fromtimestamp(now + 45, UTC).replace(second=0, microsecond=0) + timedelta(minutes=1)
    # the week the report due at ``fire`` covers (run just before Monday 00:00, that is the week now
    # ending: the week before it is then the one a start-up catches up on, and it must hold no data)
    week = last_full_week(fire.timestamp(), zone("UTC"))
    db = make_engine(pg_url)
    with make_sessionmaker(db)() as s:
        rw.build(s, week0=week.start, lead=0.0)  # the week before it had no data: nothing older is due
    db.dispose()
    every = fire.strftime("%a %H:%M").lower()
    with slack_stack(tmp_path, pg_url) as it:
        cfg = tmp_path / "herowatch.yaml"
        cfg.write_text(
            "watch:\n"
            "  - {name: hero, gpus: 703, poll_interval: 5s, sim: {run: hero-1, step_time: 1s}}\n"
            f"receivers:\n  - {{name: oncall, kind: slack, channel: {CHANNEL}, "
            f"base_url: '{it.slack.api_url}', timeout: 5s}}\n"
            "route: {receiver: oncall}\n"
            f"reports:\n  - {{every: '{every}', timezone: UTC, receiver: oncall}}\n",
            encoding="utf-8",
        )
        a, b = it.serve(cfg, replicas=2)

        def posts() -> list:
            return [m for m in it.slack.roots(CHANNEL) if m.text.startswith("herowatch report")]

        assert posts() == [], "nothing is due before the schedule's time"
        wait_for(posts, fire.timestamp() - time.time() + 60, "the scheduled report in Slack", every=0.5)
        time.sleep(35)  # both replicas' jobs have looked again since
        (post,) = posts()
        assert f"week of {datetime.fromtimestamp(week.start, UTC):%Y-%m-%d}" in post.text
        assert "oom_kills: " in post.text and "each during a checkpoint save" in post.text
        assert "GPU·h" in post.text
        pictures = sorted(f["name"] for m in it.slack.thread(CHANNEL, post.ts) for f in m.files)
        assert pictures == ["goodput.png", "incidents.png"]
        for old in (a, b):  # a restart of either replica sends nothing again
            old.stop()
            (new,) = it.serve(cfg)
        time.sleep(35)
        assert len(posts()) == 1, [m.text[:80] for m in posts()]
        assert not a.errors() and not b.errors()
