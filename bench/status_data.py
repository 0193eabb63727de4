"""The data the status bench serves: realistic runs (stats with goodput from a few hundred samples each,
three chart series of 512 min/max buckets each), firing and pending alerts with their transitions,
active silences. Used by bench/api_load.py."""

from __future__ import annotations

import math
import random
import time

from monitor.runs.run_stats import RunStats
from monitor.storage import migrate
from monitor.storage.db import make_engine, make_sessionmaker
from monitor.storage.models import (
    Alert,
    AlertTransition,
    Run,
    SeriesBucket,
    SeriesMeta,
    Silence,
)

NOW = 1_780_000_000.0
METRICS = ("train/loss", "throughput/tokens_per_second", "throughput/mfu")
BUCKETS = 512


# ---- the data -----------------------------------------------------------------------------------
def run_stats(rng: random.Random, last_step: int, kind: str) -> dict:
    """A RunStats snapshot from a few hundred samples ending at NOW, with the run's incident."""
    rs = RunStats(target_step=250_000)
    step_time = rng.uniform(8, 14)
    n = 300
    t0 = NOW - n * step_time - (2400 if kind == "stall" else 0)
    rs.observe(t0 - 30, None, {}, state="running")
    for i in range(n):
        t = t0 + i * step_time
        step = last_step - n + i
        if kind == "restart" and i == n // 2:
            step -= 40
        if kind == "stall" and i == n - 1:
            t += 2400
        rs.observe(
            t,
            step,
            {
                "train/loss": 2.2 + 3 / math.sqrt(1 + step / 500),
                "throughput/mfu": 41.0,
                "throughput/tokens_per_second": 4_194_304 / step_time,
            },
            state="running",
        )
    if kind == "crashed":
        rs.observe(NOW - 600, None, {}, state="crashed")
    return rs.snapshot(NOW)


def series_rows(run_id: str, last_step: int, rng: random.Random) -> tuple[list[dict], list[dict]]:
    width = 2 ** max(0, math.ceil(math.log2(max(1, last_step / BUCKETS))))
    metas, buckets = [], []
    for metric in METRICS:
        n = min(BUCKETS, last_step // width)
        metas.append(
            {
                "run_id": run_id,
                "metric": metric,
                "axis": "step",
                "width": float(width),
                "buckets": n,
                "points": n * width,
            }
        )
        for b in range(n):
            x0 = b * width
            if metric == "train/loss":
                base = 2.2 + 8 / math.sqrt(1 + x0 / 150)
            elif metric == "throughput/mfu":
                base = 41 + rng.gauss(0, 0.5)
            else:
                base = 400_000 + rng.gauss(0, 5000)
            lo, hi = base * 0.98, base * (1.02 if rng.random() > 0.01 else 2.0)  # now and then a spike
            buckets.append(
                {
                    "run_id": run_id,
                    "metric": metric,
                    "x0": float(x0),
                    "min": lo,
                    "max": hi,
                    "sum": base * width,
                    "count": width,
                    "nonfinite": 0,
                    "last": base,
                    "t_last": NOW,
                }
            )
    return metas, buckets


def fill(url: str, runs: int) -> None:
    migrate.upgrade(url)
    engine = make_engine(url)
    sessions = make_sessionmaker(engine)
    rng = random.Random(42)
    kinds = ["ok"] * 7 + ["stall", "restart", "crashed"]
    started = time.perf_counter()
    with sessions.begin() as s:
        for i in range(runs):
            rid, kind = f"hero-{i:03d}", rng.choice(kinds)
            last_step = rng.randint(5_000, 200_000)
            s.add(
                Run(
                    id=rid,
                    watch="bench",
                    source="wandb",
                    display_name=rid,
                    labels={"team": "pretrain"},
                    state="crashed" if kind == "crashed" else "running",
                    last_step=last_step,
                    last_step_at=NOW - 10,
                    last_seen_at=NOW,
                    last_polled_at=NOW,
                    first_seen_at=NOW - 86400,
                    restarts=1 if kind == "restart" else 0,
                    stats=run_stats(rng, last_step, kind),
                )
            )
        s.flush()
        for i in range(runs):
            metas, buckets = series_rows(f"hero-{i:03d}", rng.randint(5_000, 200_000), rng)
            s.execute(SeriesMeta.__table__.insert(), metas)
            s.execute(SeriesBucket.__table__.insert(), buckets)
        for i in range(0, runs, 7):
            state = "firing" if i % 2 == 0 else "pending"
            rid = f"hero-{i:03d}"
            labels = {"alertname": "progress_stalled", "run": rid, "severity": "critical", "team": "pretrain"}
            a = Alert(
                fingerprint=f"fp{i}",
                rule="progress_stalled",
                kind="stall",
                run_id=rid,
                severity="critical",
                labels=labels,
                annotations={"summary": f"{rid}: no new step for 40m (limit 15m)"},
                state=state,
                active_at=NOW - 1800,
                fired_at=NOW - 1500 if state == "firing" else None,
                updated_at=NOW,
            )
            s.add(a)
            s.flush()
            s.add(
                AlertTransition(
                    alert_id=a.id,
                    run_id=rid,
                    at=NOW - 1800,
                    from_state="inactive",
                    to_state=state,
                    reason="no new step for 40m (limit 15m)",
                )
            )
        for i in range(5):
            s.add(
                Silence(
                    matchers={"matchers": [f"run=hero-{i * 14:03d}"]},
                    starts_at=NOW - 60,
                    ends_at=NOW + 7200,
                    created_by="bench",
                    comment="",
                    created_at=NOW - 60,
                )
            )
    engine.dispose()
    print(
        f"filled {runs} runs ({runs * len(METRICS) * BUCKETS:,} series buckets at most) "
        f"in {time.perf_counter() - started:.1f}s"
    )
