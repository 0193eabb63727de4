"""An alert storm: 500 alerts in one minute across 50 runs, through the whole notification pipeline
(grouping, throttling, the outbox) to the Slack stand-in, which rate-limits like Slack (429 with
Retry-After). Prints how many Slack messages the storm became, how many 429s were honoured, how long
the backlog took to drain, and checks that every alert reached Slack and none twice.

"Reached" and "twice" are counted per alert, from what Slack holds: every message Slack stored (roots
and thread replies), each read as it was first posted (an edit does not notify anyone, a post does).
An alert named in two posted messages was delivered twice: the bench fails, as it does for one that
never arrived.

    python bench/alert_storm.py [--alerts 500] [--runs 50]
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sqlalchemy import func, select  # noqa: E402

from alerts.clock import ManualClock  # noqa: E402
from alerts.grouping import GroupTiming  # noqa: E402
from alerts.notifiers.base import Notifier  # noqa: E402
from alerts.notifiers.slack import SlackNotifier  # noqa: E402
from alerts.outbox import Dispatcher  # noqa: E402
from alerts.routing import Route  # noqa: E402
from monitor.delivery.enqueue import Enqueuer  # noqa: E402
from monitor.delivery.pipeline import Pipeline  # noqa: E402
from monitor.storage import migrate  # noqa: E402
from monitor.storage.db import make_engine, make_sessionmaker  # noqa: E402
from monitor.storage.models import Alert, Notification  # noqa: E402
from tests.standins.slack import DEFAULT_TOKEN, SlackStandin  # noqa: E402

ALERT = re.compile(r"storm alert (\d+)\b")


@dataclass
class Storm:
    """What the storm became in Slack, counted per alert."""

    alerts: int
    deliveries: Counter[int] = field(default_factory=Counter)  # alert -> posted messages naming it
    reached: set[int] = field(default_factory=set)
    roots: int = 0
    posts: int = 0
    refused: int = 0
    updates: int = 0
    statuses: dict[str, int] = field(default_factory=dict)
    drained: float = 0.0
    wall: float = 0.0

    @property
    def lost(self) -> list[int]:
        return sorted(set(range(self.alerts)) - self.reached)

    @property
    def twice(self) -> list[int]:
        return sorted(i for i, n in self.deliveries.items() if n > 1)


def count_deliveries(slack: SlackStandin, channel: str, alerts: int) -> tuple[Counter[int], set[int]]:
    """Per alert: how many posted messages named it (as first posted), and which are named at all now."""
    posted: Counter[int] = Counter()
    reached: set[int] = set()
    messages = []
    for root in slack.roots(channel):
        messages += [root, *slack.thread(channel, root.ts)]
    for m in messages:
        first = m.edits[0] if m.edits else {"text": m.text, "blocks": m.blocks}
        for i in {int(x) for x in ALERT.findall(f"{first['text']} {first['blocks']}")}:
            posted[i] += 1
        reached |= {int(x) for x in ALERT.findall(f"{m.text} {m.blocks}")}
    return posted, {i for i in reached if i < alerts}


def run_storm(
    alerts: int = 500,
    runs: int = 50,
    database_url: str | None = None,
    wrap: Callable[[Notifier], Notifier] | None = None,
) -> Storm:
    """Play the storm; ``wrap`` lets a test put a faulty stage around the Slack notifier."""
    logging.getLogger("alerts").setLevel(logging.ERROR)  # the retries are counted below, not logged
    os.environ["SLACK_BOT_TOKEN"] = DEFAULT_TOKEN
    clock = ManualClock(1_780_000_000.0)
    with tempfile.TemporaryDirectory() as tmp, SlackStandin(channels=["C0STORM"]) as slack:
        url = database_url or f"sqlite:///{tmp}/storm.db"
        migrate.upgrade(url)
        engine = make_engine(url)
        sessions = make_sessionmaker(engine)
        enqueuer = Enqueuer(Route("oncall", timing=GroupTiming(30, 300, 4 * 3600)), {"oncall": "slack"})
        notifier: Notifier = SlackNotifier(channel="C0STORM", base_url=slack.api_url, timeout=5, plots=False)
        if wrap is not None:
            notifier = wrap(notifier)
        dispatcher = Dispatcher(Pipeline(sessions), {"oncall": notifier}, clock.time)
        limited = True
        slack.rate_limit(retry_after=2, times=-1, methods=["chat.postMessage"])  # posts refused with 429...
        start, storm_for = clock.time(), 60.0
        wall0 = time.perf_counter()
        made, ticks = 0, 0
        while True:
            ticks += 1
            now = clock.advance(0.25)
            while made < alerts and now - start >= made * storm_for / alerts:
                run = f"run-{made % runs:03d}"
                with sessions.begin() as s:
                    a = Alert(
                        fingerprint=f"f{made}",
                        rule=f"rule_{made // runs}",
                        kind="x",
                        run_id=run,
                        severity="warning",
                        labels={"alertname": f"rule_{made // runs}", "run": run},
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
            if made >= alerts and left == 0:
                break
            if clock.time() - start > 3600:
                raise SystemExit("the backlog did not drain within an hour of clock time")
        storm = Storm(alerts, drained=clock.time() - start, wall=time.perf_counter() - wall0)
        storm.deliveries, storm.reached = count_deliveries(slack, "C0STORM", alerts)
        with sessions() as s:
            storm.statuses = dict(Counter(s.scalars(select(Notification.status))))
        storm.roots = len(slack.roots("C0STORM"))
        storm.posts = len(slack.calls_to("chat.postMessage"))
        storm.refused = sum(1 for c in slack.calls_to("chat.postMessage") if c.status == 429)
        storm.updates = len(slack.calls_to("chat.update"))
        engine.dispose()
        return storm


def verdict(storm: Storm) -> str | None:
    """None when every alert reached Slack exactly once, else what went wrong."""
    problems = []
    if storm.lost:
        problems.append(f"LOST ALERTS: {len(storm.lost)} never reached Slack (first: {storm.lost[:5]})")
    if storm.twice:
        problems.append(
            f"DUPLICATED ALERTS: {len(storm.twice)} posted more than once (first: {storm.twice[:5]})"
        )
    return "; ".join(problems) or None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--alerts", type=int, default=500)
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--database-url", default=None)
    args = ap.parse_args()
    storm = run_storm(args.alerts, args.runs, args.database_url)
    print(
        f"{args.alerts} alerts over 60 s on {args.runs} runs "
        "(group_wait 30 s, group_interval 5 m, Slack refusing posts half of the time)"
    )
    print(f"  Slack roots (one per run)     {storm.roots}")
    print(f"  chat.postMessage calls        {storm.posts}   (answered 429, then retried: {storm.refused})")
    print(f"  chat.update calls             {storm.updates}")
    print(f"  outbox rows by status         {storm.statuses}")
    once = sum(1 for n in storm.deliveries.values() if n == 1)
    print(f"  alerts that reached Slack     {len(storm.reached)} of {args.alerts}")
    print(
        f"  posted exactly once           {once} of {args.alerts}   (limit: all; twice: {len(storm.twice)})"
    )
    print(f"  backlog drained after         {storm.drained:.0f} s of clock ({storm.wall:.1f} s of wall time)")
    problem = verdict(storm)
    print(f"  verdict                       {'FAIL: ' + problem if problem else 'meets (every alert once)'}")
    if problem:
        raise SystemExit(problem)


if __name__ == "__main__":
    main()
