"""An alert storm: 500 alerts in one minute across 50 runs, through the whole notification pipeline
(grouping, throttling, the outbox) to the Slack stand-in, which rate-limits like Slack (429 with
Retry-After). Prints how many Slack messages the storm became, how many 429s were honoured, how long
the backlog took to drain, and checks that every alert reached Slack and none twice.

    python bench/alert_storm.py [--alerts 500] [--runs 50]
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sqlalchemy import func, select  # noqa: E402

from alerts.clock import ManualClock  # noqa: E402
from alerts.grouping import GroupTiming  # noqa: E402
from alerts.notifiers.slack import SlackNotifier  # noqa: E402
from alerts.outbox import Dispatcher  # noqa: E402
from alerts.routing import Route  # noqa: E402
from monitor.delivery.enqueue import Enqueuer  # noqa: E402
from monitor.delivery.pipeline import Pipeline  # noqa: E402
from monitor.storage import migrate  # noqa: E402
from monitor.storage.db import make_engine, make_sessionmaker  # noqa: E402
from monitor.storage.models import Alert, Notification  # noqa: E402
from tests.standins.slack import DEFAULT_TOKEN, SlackStandin  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--alerts", type=int, default=500)
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--database-url", default=None)
    args = ap.parse_args()
    logging.getLogger("alerts").setLevel(logging.ERROR)  # the retries are counted below, not logged
    os.environ["SLACK_BOT_TOKEN"] = DEFAULT_TOKEN
    clock = ManualClock(1_780_000_000.0)
    with tempfile.TemporaryDirectory() as tmp, SlackStandin(channels=["C0STORM"]) as slack:
        url = args.database_url or f"sqlite:///{tmp}/storm.db"
        migrate.upgrade(url)
        engine = make_engine(url)
        sessions = make_sessionmaker(engine)
        enqueuer = Enqueuer(Route("oncall", timing=GroupTiming(30, 300, 4 * 3600)), {"oncall": "slack"})
        notifier = SlackNotifier(channel="C0STORM", base_url=slack.api_url, timeout=5, plots=False)
        dispatcher = Dispatcher(Pipeline(sessions), {"oncall": notifier}, clock.time)
        limited = True
        slack.rate_limit(retry_after=2, times=-1, methods=["chat.postMessage"])  # posts refused with 429...
        start, storm_for = clock.time(), 60.0
        wall0 = time.perf_counter()
        made, ticks = 0, 0
        while True:
            ticks += 1
            now = clock.advance(0.25)
            while made < args.alerts and now - start >= made * storm_for / args.alerts:
                run = f"run-{made % args.runs:03d}"
                with sessions.begin() as s:
                    a = Alert(
                        fingerprint=f"f{made}",
                        rule=f"rule_{made // args.runs}",
                        kind="x",
                        run_id=run,
                        severity="warning",
                        labels={"alertname": f"rule_{made // args.runs}", "run": run},
                        annotations={"summary": f"{run}: storm alert {made}"},
                        state="firing",
                        active_at=now,
                        fired_at=now,
                        updated_at=now,
                    )
                    s.add(a)
                    s.flush()
                    enqueuer.on_transition(s, a, "firing", now)
                made += 1
            if ticks % 20 == 0:  # ...then let through for 5 s, refused for 5 s, and so on
                if limited:
                    slack.clear_faults()
                else:
                    slack.rate_limit(retry_after=2, times=-1, methods=["chat.postMessage"])
                limited = not limited
            dispatcher.run_once(limit=50)
            with sessions() as s:
                left = s.scalar(
                    select(func.count())
                    .select_from(Notification)
                    .where(Notification.status.in_(("pending", "sending")))
                )
            if made >= args.alerts and left == 0:
                break
            if clock.time() - start > 3600:
                raise SystemExit("the backlog did not drain within an hour of clock time")
        drained = clock.time() - start
        wall = time.perf_counter() - wall0
        texts = [m.text + str(m.blocks) for m in slack.roots("C0STORM")]
        for root in slack.roots("C0STORM"):
            texts += [m.text + str(m.blocks) for m in slack.thread("C0STORM", root.ts)]
        reached = {i for i in range(args.alerts) if any(f"storm alert {i}" in t for t in texts)}
        with sessions() as s:
            statuses = Counter(s.scalars(select(Notification.status)))
        posts = len(slack.calls_to("chat.postMessage"))
        updates = len(slack.calls_to("chat.update"))
        print(
            f"{args.alerts} alerts over {storm_for:g} s on {args.runs} runs "
            "(group_wait 30 s, group_interval 5 m, Slack refusing posts half of the time)"
        )
        print(f"  Slack roots (one per run)     {len(slack.roots('C0STORM'))}")
        refused = sum(1 for c in slack.calls_to("chat.postMessage") if c.status == 429)
        print(f"  chat.postMessage calls        {posts}   (answered 429, then retried: {refused})")
        print(f"  chat.update calls             {updates}")
        print(f"  outbox rows by status         {dict(statuses)}")
        print(f"  alerts that reached Slack     {len(reached)} of {args.alerts}")
        print(f"  backlog drained after         {drained:.0f} s of clock ({wall:.1f} s of wall time)")
        engine.dispose()
        if len(reached) != args.alerts:
            raise SystemExit("LOST ALERTS")


if __name__ == "__main__":
    main()
