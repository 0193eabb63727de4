"""A W&B project of 1,000 running runs (20 tagged hero) behind a stand-in that enforces W&B's quota
(200 requests a minute per API key, 429 with Retry-After beyond it), polled by herowatch's W&B source
with the real ``wandb`` client (issue 40, item 3).

Time is simulated: the stand-in's quota window and herowatch's quota read one clock, moved by the poll
interval between polls (and by any wait for a place); every run logs ``--steps`` steps an interval.
Printed side by side with the limit: requests a minute against the quota, requests over it (429s),
hero runs read on time, the other runs' effective read interval against the poll interval, and
requests a poll against one Runs page per 50 runs plus one HistoryPage per run read.

    .venv/bin/python bench/wandb_quota.py [--runs 1000] [--heroes 20] [--quota 200] [--minutes 4]
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.standins.wandb_server import WandbStandin  # noqa: E402
from tests.wandb_support import ENTITY, KEY, PROJECT, Watcher, steps  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--heroes", type=int, default=20)
    ap.add_argument("--quota", type=int, default=200, help="requests a minute")
    ap.add_argument("--interval", type=float, default=30.0, help="poll interval, seconds")
    ap.add_argument("--minutes", type=float, default=4.0)
    ap.add_argument("--steps", type=int, default=3, help="steps each run logs an interval")
    args = ap.parse_args()

    names = [f"hero{i}" if i < args.heroes else f"sweep{i}" for i in range(args.runs)]
    polls = int(args.minutes * 60 / args.interval)
    with WandbStandin(KEY, entity=ENTITY) as server:
        server.enforce_quota(args.quota, window=60.0)
        for name in names:
            server.add_run(PROJECT, name, tags=["hero"] if name.startswith("hero") else ["sweep"])
            server.log_steps(PROJECT, name, 0, args.steps)
        w = Watcher(server, timeout=10, warmup_steps=100, rate_limit=args.quota)
        now = [0.0]
        server.quota_clock = lambda: now[0]
        w.source.clock = lambda: now[0]
        w.source.quota_sleep = lambda s: now.__setitem__(0, now[0] + s)

        total = over = hero_on_time = hero_due = 0
        per_poll, expected, walls = [], [], []
        reads = dict.fromkeys(names, 0)
        for poll in range(polls):
            if poll:
                for name in names:
                    server.log_steps(PROJECT, name, args.steps * poll, args.steps * (poll + 1))
            started = now[0]
            t0 = time.perf_counter()
            res = w.poll()
            walls.append(time.perf_counter() - t0)
            if res.error:
                print(f"poll {poll}: error {res.error}")
            total += server.count()
            over += server.over_quota()
            read = [n for n in names if steps(res, n)]
            for n in read:
                reads[n] += 1
            hero_due += args.heroes
            hero_on_time += sum(1 for n in read if n.startswith("hero") and now[0] - started <= args.interval)
            per_poll.append(server.count())
            expected.append(math.ceil(args.runs / 50) + len(read))
            now[0] = started + args.interval

    minutes = polls * args.interval / 60
    rate = total / minutes
    others = [reads[n] for n in names[args.heroes :]]
    read_every = polls * args.interval / statistics.mean(others) if statistics.mean(others) else float("inf")
    print(
        f"{args.runs} running runs ({args.heroes} hero), quota {args.quota}/min, a poll every "
        f"{args.interval:g}s, {polls} polls ({minutes:g} simulated minutes)"
    )
    print(f"{'figure':<44} {'measured':>10} {'limit':>10} {'ratio':>7}")
    rows = [
        ("requests a minute", rate, args.quota),
        ("requests over the quota (429)", over, 0),
        ("hero runs read on time (of due)", hero_on_time, hero_due),
        ("other runs: seconds between reads", read_every, args.interval),
        ("requests a poll (median)", statistics.median(per_poll), statistics.median(expected)),
        ("poll wall seconds (median, real)", statistics.median(walls), args.interval),
    ]
    for what, got, limit in rows:
        ratio = f"{got / limit:7.2f}" if limit else f"{'':>7}"
        print(f"{what:<44} {got:10.1f} {limit:10.1f} {ratio}")
    print("(requests a poll: limit is one Runs page per 50 runs plus one HistoryPage per run read)")


if __name__ == "__main__":
    main()
