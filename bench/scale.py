"""How herowatch scales: N simulated runs with M metrics each, polled every P seconds, in real time.

Prints the CPU share of the process, its memory (RSS), and the poll-cycle durations (per watch poll:
read, evaluate, persist), for SQLite and, with --database-url, PostgreSQL, side by side when both run.

    python bench/scale.py                       # 1,000 runs, 20 metrics, 15 s polls, 90 s, SQLite
    python bench/scale.py --runs 200 --seconds 45 --database-url postgresql://postgres@127.0.0.1/test
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from alerts.clock import SystemClock  # noqa: E402
from monitor.config.loader import parse_config  # noqa: E402
from monitor.service import build_service  # noqa: E402
from monitor.settings import Settings  # noqa: E402


def config(runs: int, metrics: int, interval: float) -> str:
    extra = max(0, metrics - 9)  # the simulated run logs 9 metrics of its own
    lines = ["watch:"]
    for i in range(runs):
        lines.append(
            f"  - {{name: run-{i:04d}, poll_interval: {interval}, sim: {{seed: {i}, step_time: 10, "
            f"extra_metrics: {extra}}}}}"
        )
    lines.append("receivers: [{name: quiet, kind: dashboard}]\nroute: {receiver: quiet}")
    return "\n".join(lines) + "\n"


def rss_mb() -> float:
    with open(f"/proc/{os.getpid()}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def run(label: str, url: str, runs: int, metrics: int, interval: float, seconds: float) -> dict:
    cfg = parse_config(config(runs, metrics, interval))
    service = build_service(cfg, Settings(database_url=url), SystemClock(), auto_migrate=True)
    durations: list[float] = []
    lock = threading.Lock()
    real_poll = service.engine.poll

    def timed(name: str):  # noqa: ANN202
        t0 = time.perf_counter()
        try:
            return real_poll(name)
        finally:
            with lock:
                durations.append(time.perf_counter() - t0)

    service.engine.poll = timed
    service.start()
    cpu0, wall0 = resource.getrusage(resource.RUSAGE_SELF), time.monotonic()
    time.sleep(seconds)
    cpu1, wall1 = resource.getrusage(resource.RUSAGE_SELF), time.monotonic()
    service.stop()
    cpu = (cpu1.ru_utime - cpu0.ru_utime) + (cpu1.ru_stime - cpu0.ru_stime)
    d = sorted(durations)
    return {
        "label": label,
        "polls": len(d),
        "polls_expected": int(runs * seconds / interval),
        "cpu_share": cpu / (wall1 - wall0),
        "rss_mb": rss_mb(),
        "p50_ms": 1000 * statistics.median(d) if d else float("nan"),
        "p99_ms": 1000 * d[int(0.99 * (len(d) - 1))] if d else float("nan"),
        "max_ms": 1000 * d[-1] if d else float("nan"),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--metrics", type=int, default=20)
    ap.add_argument("--interval", type=float, default=15.0)
    ap.add_argument("--seconds", type=float, default=90.0)
    ap.add_argument("--database-url", default=None, help="also run against this database (PostgreSQL)")
    args = ap.parse_args()
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        results.append(
            run("sqlite", f"sqlite:///{tmp}/scale.db", args.runs, args.metrics, args.interval, args.seconds)
        )
    if args.database_url:
        results.append(
            run("postgresql", args.database_url, args.runs, args.metrics, args.interval, args.seconds)
        )
    print(
        f"{args.runs} simulated runs x {args.metrics} metrics, polled every {args.interval:g} s, "
        f"for {args.seconds:g} s on {os.cpu_count()} cores"
    )
    print(
        f"{'database':<12}{'polls':>12}{'CPU share':>11}{'RSS MB':>9}{'poll p50 ms':>13}{'p99 ms':>9}"
        f"{'max ms':>9}"
    )
    for r in results:
        print(
            f"{r['label']:<12}{r['polls']:>6}/{r['polls_expected']:<5}{r['cpu_share']:>11.1%}{r['rss_mb']:>9.0f}"
            f"{r['p50_ms']:>13.1f}{r['p99_ms']:>9.1f}{r['max_ms']:>9.1f}"
        )


if __name__ == "__main__":
    main()
