"""The weekly report over a week of 200 runs polled every 15 s: how long it takes to build, and its peak
memory, against the same week polled every 60 s (a quarter of the samples): the report reads the goodput
ledger, the alerts and the bounded series, never the samples, so both figures should not move.

The week is written the way the engine writes it: each run's polls go through its goodput tracker
(``Goodput``), whose ledger is drained into ``goodput_slots``/``goodput_events``; the loss is folded into
the bounded series; each run gets a hang, a restart and a few pages. Side by side with the limit the build
approaches: the one ``GROUP BY`` over the week's slots that every report needs.

    .venv/bin/python bench/report.py [--runs 200] [--database-url URL]
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
import tracemalloc
from contextlib import ExitStack
from pathlib import Path

from scale import scratch_database  # (bench/, beside this file)
from sqlalchemy import func, select

from monitor.reports import markdown
from monitor.reports.build import GpuSettings, build_report
from monitor.reports.period import week_of, zone
from monitor.runs.goodput import Goodput
from monitor.storage import goodput_repo, migrate, series
from monitor.storage.db import make_engine, make_sessionmaker
from monitor.storage.models import Alert, GoodputSlot, Run
from monitor.storage.series import Point

WEEK0 = 1_795_392_000.0  # Monday 2026-11-23 00:00 UTC
DAY, H = 86400.0, 3600.0


def write_week(url: str, runs: int, every: float) -> int:
    """The week of ``runs`` runs polled every ``every`` seconds (a step per poll); returns the samples."""
    db = make_engine(url)
    sessions = make_sessionmaker(db)
    samples = 0
    for r in range(runs):
        rng = random.Random(r)
        run_id = f"bench:hero/run-{r:04d}"
        stats = Goodput()  # the tracker RunStats feeds (its other figures do not reach the report)
        hang, restart = WEEK0 + rng.uniform(0.5, 3) * DAY, WEEK0 + rng.uniform(3.5, 6) * DAY
        t, step, points, pages = WEEK0 - H, 0, [], []
        slots: dict = {}
        events: list = []
        while t < WEEK0 + 7 * DAY:
            if hang <= t < hang + 2 * H:
                t = hang + 2 * H  # no step for two hours
                pages.append(("progress_stalled", hang + 600, t + 60))
            elif restart <= t < restart + every:
                stats.observe(t + 5, None, "crashed")
                t, step = t + 1200, step - 200  # back 20 minutes later from a checkpoint
                pages.append(("run_crashed", restart + 30, t))
            step += 1
            loss = 2.0 + 8.0 / (1 + step / 5000)
            stats.observe(t, step, "running")
            samples += 1
            if step % 8 == 0:
                points.append(Point(float(step), loss, t))
            if step % 240 == 0:  # a checkpoint save
                t += 90
            t += every
            if step % 64 == 0:
                s_, e_ = stats.ledger.drain()
                for k, v in s_.items():
                    slots[k] = slots.get(k, 0.0) + v
                events += e_
        s_, e_ = stats.ledger.drain()
        for k, v in s_.items():
            slots[k] = slots.get(k, 0.0) + v
        with sessions.begin() as s:
            s.add(
                Run(
                    id=run_id,
                    watch="hero",
                    source="bench",
                    name=f"run-{r:04d}",
                    first_seen_at=WEEK0 - H,
                    labels={},
                    stats={"goodput": stats.to_dict(), "target_step": 10_000_000},
                    last_polled_at=t,
                )
            )
            s.flush()
            goodput_repo.add(s, run_id, slots, events + e_)
            series.ingest(s, run_id, "train/loss", points, "step")
            for n, (rule, fired, resolved) in enumerate(pages):
                s.add(
                    Alert(
                        fingerprint=f"{r}-{n}",
                        rule=rule,
                        kind="rule",
                        run_id=run_id,
                        severity="critical",
                        labels={},
                        annotations={},
                        state="resolved",
                        active_at=fired - 60,
                        fired_at=fired,
                        resolved_at=resolved,
                        updated_at=resolved,
                    )
                )
    db.dispose()
    return samples


def measure(url: str) -> dict[str, float]:
    db = make_engine(url)
    sessions = make_sessionmaker(db)
    p = week_of(WEEK0 + 1, zone("UTC"))
    with sessions() as s:  # warm the connection and the caches once
        build_report(s, p, now=WEEK0 + 8 * DAY)
    out = {}
    with sessions() as s:
        t0 = time.perf_counter()
        s.execute(
            select(GoodputSlot.run_id, GoodputSlot.bucket, func.sum(GoodputSlot.seconds))
            .where(GoodputSlot.slot >= p.start, GoodputSlot.slot < p.end)
            .group_by(GoodputSlot.run_id, GoodputSlot.bucket)
        ).all()
        out["group_by_s"] = time.perf_counter() - t0
        out["slots"] = s.scalar(select(func.count()).select_from(GoodputSlot))
    tracemalloc.start()
    with sessions() as s:
        t0 = time.perf_counter()
        report = build_report(s, p, now=WEEK0 + 8 * DAY, gpus=GpuSettings({"hero": 512}, {}))
        out["build_s"] = time.perf_counter() - t0
        t1 = time.perf_counter()
        markdown.render(report)
        out["markdown_s"] = time.perf_counter() - t1
    out["peak_mb"] = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    out["runs"] = len(report.runs)
    db.dispose()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument(
        "--database-url",
        default=None,
        help="a PostgreSQL server: each week in a scratch database on it, dropped after (default: SQLite "
        "files in a temporary folder)",
    )
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for every in (15.0, 60.0):
            with ExitStack() as stack:
                if args.database_url:  # never the server's own database: a run cut short leaves nothing
                    url = stack.enter_context(scratch_database(args.database_url))
                else:
                    url = f"sqlite:///{Path(tmp) / f'week-{int(every)}.db'}"
                migrate.upgrade(url)
                t0 = time.perf_counter()
                samples = write_week(url, args.runs, every)
                print(
                    f"wrote a week of {args.runs} runs polled every {every:g}s: {samples:,} samples "
                    f"in {time.perf_counter() - t0:.0f}s",
                    flush=True,
                )
                rows.append((every, samples, measure(url)))
    print()
    print(
        f"{'polled every':>12} {'samples':>12} {'slots':>8} {'GROUP BY':>9} {'report':>8} {'ratio':>6} "
        f"{'markdown':>9} {'peak MB':>8}"
    )
    for every, samples, m in rows:
        print(
            f"{every:>11g}s {samples:>12,} {m['slots']:>8,} {m['group_by_s']:>8.3f}s {m['build_s']:>7.3f}s "
            f"{m['build_s'] / m['group_by_s']:>5.1f}x {m['markdown_s']:>8.3f}s {m['peak_mb']:>8.1f}"
        )
    print("\ntarget: the report under 5 s; the same time and memory whatever the number of samples")


if __name__ == "__main__":
    main()
