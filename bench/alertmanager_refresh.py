"""What keeping Alertmanager told costs: N alert groups (one firing alert per run) sent to the real
Alertmanager (Debian's prometheus-alertmanager, started here on loopback), then one refresh round: the
planner's pass over the open groups and the re-posts it plans, drained through the outbox. Prints each
figure beside the limit it approaches: a round must end well within the planner's period (half the
resend interval, 30 s by default), or Alertmanager would end alerts that still fire.

    python bench/alertmanager_refresh.py [--groups 500] [--database-url postgresql://...]
"""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from alerts.notifiers.alertmanager import AlertmanagerNotifier  # noqa: E402
from monitor.delivery import reminders  # noqa: E402
from monitor.storage import migrate  # noqa: E402
from tests.alertmanager_server import AlertmanagerServer, WebhookSink  # noqa: E402
from tests.delivery_support import Delivery  # noqa: E402

RESEND = 60.0
PLANNER_PERIOD = RESEND / 2  # monitor/service.py: the planner runs at least twice per resend interval


def drain(d: Delivery) -> int:
    sent = 0
    while n := d.dispatcher.run_once(limit=200):
        sent += n
    return sent


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--groups", type=int, default=500)
    ap.add_argument("--database-url", default=None)
    args = ap.parse_args()
    logging.getLogger("alerts").setLevel(logging.ERROR)
    with tempfile.TemporaryDirectory() as tmp:
        sink = WebhookSink()
        with AlertmanagerServer(Path(tmp) / "am", sink.url) as am:
            url = args.database_url or f"sqlite:///{tmp}/refresh.db"
            migrate.upgrade(url)
            notifier = AlertmanagerNotifier([am.url], resend_interval=RESEND)
            d = Delivery(url, {"am": notifier}, t0=float(int(time.time())))
            for i in range(args.groups):
                d.alert("progress_stalled", run=f"hero-{i}")
            d.now = d.t0 + 30
            t = time.perf_counter()
            opened = drain(d)
            first = time.perf_counter() - t
            held = len(am.alerts())

            d.now = d.t0 + 30 + RESEND
            t = time.perf_counter()
            with d.sessions.begin() as s:
                planned = reminders.plan(s, d.now, (), d.store.silences, d.refresh)
            plan_s = time.perf_counter() - t
            t = time.perf_counter()
            refreshed = drain(d)
            send_s = time.perf_counter() - t
            still = len(am.alerts())
            d.close()
        sink.close()
    db = "PostgreSQL" if args.database_url else "SQLite"
    total = plan_s + send_s
    print(f"alertmanager refresh, {args.groups} groups on {db} against the real Alertmanager")
    print(f"  first messages: {opened} sent in {first:.2f} s; Alertmanager holds {held} alerts")
    print(f"  refresh round:  {planned} planned in {plan_s:.2f} s, {refreshed} sent in {send_s:.2f} s")
    ratio = total / PLANNER_PERIOD
    print(f"  round {total:.2f} s vs planner period {PLANNER_PERIOD:.0f} s: ratio {ratio:.3f}")
    print(f"  alerts still firing in Alertmanager after the round: {still} of {args.groups}")
    ok = opened == planned == refreshed == held == still == args.groups
    print("OK" if ok else "MISMATCH")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
