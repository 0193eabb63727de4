"""Time from an incident to the Slack message about it, against the poll interval.

A simulated run (1 step/s) gets a NaN loss, an OOM burst and a stall; herowatch runs for real (its
scheduler, the outbox, slack-sdk against the Slack stand-in on loopback) with the hero pack, the stall
floor lowered to 10 s so the bench stays short. For each poll interval the table shows, per incident,
seconds from the event to the message in the channel. Expect about one poll interval plus the rule's
own wait (the stall's limit), plus delivery.

    python bench/detect_latency.py                 # poll intervals 1, 2 and 5 s
    python bench/detect_latency.py --intervals 1 2 5 10
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from alerts.clock import SystemClock  # noqa: E402
from monitor.config.loader import parse_config  # noqa: E402
from monitor.service import build_service  # noqa: E402
from monitor.settings import Settings  # noqa: E402
from tests.standins.slack import DEFAULT_TOKEN, SlackStandin  # noqa: E402

INCIDENTS = {"loss_nonfinite": 20.0, "oom_kills": 30.0, "progress_stalled": 40.0}  # seconds after start
STALL_LIMIT = 10.0


def config(interval: float, slack_url: str) -> str:
    return f"""
watch:
  - name: bench-run
    poll_interval: {interval}s
    sim:
      step_time: 1s
      jitter: 0.02
      checkpoint_every: 100000
      eval_every: 100000
      incidents:
        - {{kind: nan, at: {INCIDENTS["loss_nonfinite"]}s}}
        - {{kind: oom_kill, at: {INCIDENTS["oom_kills"]}s, count: 2}}
        - {{kind: stall, at: {INCIDENTS["progress_stalled"]}s, duration: 60s}}
rules:
  packs: [hero]
  overrides:
    progress_stalled: {{floor: {STALL_LIMIT}s, k: 3, startup: 60s}}
receivers:
  - {{name: oncall, kind: slack, channel: C0BENCH, base_url: '{slack_url}', timeout: 5s, plots: false}}
route: {{receiver: oncall, group_by: [run, alertname], group_wait: 0s, group_interval: 1s}}
"""


def measure(interval: float, timeout: float = 120.0) -> dict[str, float | None]:
    os.environ["SLACK_BOT_TOKEN"] = DEFAULT_TOKEN
    with SlackStandin(channels=["C0BENCH"]) as slack, tempfile.TemporaryDirectory() as tmp:
        cfg = parse_config(config(interval, slack.api_url))
        service = build_service(cfg, Settings(database_url=f"sqlite:///{tmp}/b.db"), SystemClock())
        seen: dict[str, float] = {}
        service.start()
        start = time.time()  # the simulated run starts at its first poll, right away
        try:
            while time.time() - start < timeout and len(seen) < len(INCIDENTS):
                for m in slack.roots("C0BENCH"):
                    for name in INCIDENTS:
                        if name not in seen and name in (m.text + str(m.blocks)):
                            seen[name] = float(m.ts) - start
                time.sleep(0.05)
        finally:
            service.stop()
    return {name: (seen[name] - at if name in seen else None) for name, at in INCIDENTS.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--intervals", type=float, nargs="+", default=[1.0, 2.0, 5.0])
    args = ap.parse_args()
    rows = [(i, measure(i)) for i in args.intervals]
    print(f"seconds from the incident to its Slack message (stall limit {STALL_LIMIT:g} s, 1 step/s)")
    print(f"{'poll interval':>14}" + "".join(f"{n:>20}" for n in INCIDENTS))
    for interval, r in rows:
        cells = "".join(f"{(f'{v:.1f}' if v is not None else 'missed'):>20}" for v in r.values())
        print(f"{interval:>13g}s{cells}")


if __name__ == "__main__":
    main()
