"""How herowatch scales: N simulated runs with M metrics each, polled every P seconds, in real time.

Prints, per database: polls on time of those due, the CPU share of a core, memory (RSS), poll-cycle
durations (p50/p99/max), where a poll's time goes (per phase, then a cProfile of polls run one after
another once the timed run is over), and the data rate beside its limit: the values written per second
against what one batched INSERT of the same values costs on the same database, measured in the same run.

    python bench/scale.py                       # 1,000 runs, 20 metrics, 15 s polls, 90 s, SQLite
    python bench/scale.py --runs 1000 --seconds 60 --database-url postgresql://postgres@127.0.0.1/postgres
    python bench/scale.py --runs 10000 --runs-per-watch 100 --skip-sqlite --database-url ...

With --database-url the bench creates a scratch database on that server (dropped at the end), so the
figures do not depend on what the server holds. ``--runs-per-watch`` makes each watch hold several
simulated runs, as a W&B project selector does.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import logging
import os
import pstats
import resource
import statistics
import sys
import tempfile
import threading
import time
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from common import malloc_report, profiled_writer, pymalloc_report, rss_mb  # noqa: E402
from sqlalchemy import create_engine, text  # noqa: E402
from sqlalchemy.engine import make_url  # noqa: E402

from alerts.clock import SystemClock  # noqa: E402
from monitor.config.loader import parse_config  # noqa: E402
from monitor.service import build_service  # noqa: E402
from monitor.settings import Settings  # noqa: E402
from monitor.storage.db import normalise_url  # noqa: E402


def config(runs: int, per_watch: int, metrics: int, interval: float) -> str:
    extra = max(0, metrics - 9)  # the simulated run logs 9 metrics of its own
    lines = ["watch:"]
    for i in range(0, runs, per_watch):
        n = min(per_watch, runs - i)
        many = f", runs: {n}" if per_watch > 1 else ""
        lines.append(
            f"  - {{name: run-{i:05d}, poll_interval: {interval}, sim: {{seed: {i}, step_time: 10, "
            f"extra_metrics: {extra}{many}}}}}"
        )
    lines.append("receivers: [{name: quiet, kind: dashboard}]\nroute: {receiver: quiet}")
    return "\n".join(lines) + "\n"


@contextmanager
def scratch_database(url: str):  # noqa: ANN201
    """A fresh database on the server of ``url``, dropped afterwards (PostgreSQL)."""
    admin = create_engine(normalise_url(url), isolation_level="AUTOCOMMIT")
    name = f"herowatch_scale_{os.getpid()}"
    with admin.connect() as c:
        c.execute(text(f'DROP DATABASE IF EXISTS "{name}"'))
        c.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        yield make_url(normalise_url(url)).set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as c:
            c.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def raw_insert_seconds(db, values: int) -> float:  # noqa: ANN001
    """What one batched INSERT of ``values`` (run, metric, x, value) rows costs on this database: the
    limit the write path approaches."""
    rows = [
        {"r": f"sim:run-{i // 20:05d}/x", "m": f"extra/m{i % 20}", "x": float(i), "v": 0.5}
        for i in range(values)
    ]
    with db.begin() as c:
        c.execute(
            text("CREATE TABLE IF NOT EXISTS bench_raw (r varchar(200), m varchar(200), x float, v float)")
        )
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        with db.begin() as c:
            c.execute(text("INSERT INTO bench_raw (r, m, x, v) VALUES (:r, :m, :x, :v)"), rows)
        best = min(best, time.perf_counter() - t0)
    with db.begin() as c:
        c.execute(text("DROP TABLE bench_raw"))
    return best


def profiled_polls(service, n: int) -> str:  # noqa: ANN001
    """cProfile of ``n`` polls run one after another, after the timed run (the scheduler stopped): the
    polling thread and the batch writer's, herowatch's own functions by cumulative time."""
    if n <= 0:
        return ""
    reader, writer = cProfile.Profile(), cProfile.Profile()
    batches = service.engine.batches
    real_write = batches._write
    batches._write = profiled_writer(batches, writer)
    reader.enable()
    for name in list(service.engine.watches)[:n]:
        service.engine.poll(name)
    reader.disable()
    batches._write = real_write
    out = io.StringIO()
    stats = pstats.Stats(reader, stream=out)
    stats.add(writer)
    stats.sort_stats("cumulative").print_stats(r"(monitor|alerts)/", 22)
    root = str(Path(__file__).resolve().parents[1]) + "/"
    lines = [ln.replace(root, "") for ln in out.getvalue().splitlines() if ln.strip()]
    return "\n".join(f"  {ln}" for ln in lines if "function calls" in ln or "(" in ln)


class GcPauses:
    """Time the garbage collector stops the process, per generation (gc.callbacks)."""

    def __init__(self) -> None:
        self.seconds = [0.0, 0.0, 0.0]
        self.count = [0, 0, 0]
        self._t0 = 0.0
        gc.callbacks.append(self)

    def __call__(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._t0 = time.perf_counter()
        else:
            self.seconds[info["generation"]] += time.perf_counter() - self._t0
            self.count[info["generation"]] += 1

    def reset(self) -> None:
        self.seconds, self.count = [0.0, 0.0, 0.0], [0, 0, 0]


GC = GcPauses()


def run(label: str, url: str, args: argparse.Namespace) -> dict:
    interval = args.interval
    cfg = parse_config(config(args.runs, args.runs_per_watch, args.metrics, interval))
    service = build_service(cfg, Settings(database_url=url), SystemClock(), auto_migrate=True)
    polls: list[tuple[str, float, float, int]] = []  # watch, start, duration, samples
    lock = threading.Lock()
    real_poll = service.engine.poll

    def timed(name: str, **kw):  # noqa: ANN003, ANN202
        t0 = time.monotonic()
        report = None
        try:
            report = real_poll(name, **kw)
            return report
        finally:
            with lock:
                polls.append((name, t0, time.monotonic() - t0, report))

    service.engine.poll = timed
    service.start()
    time.sleep(args.warmup)  # every watch taken up and polled once: the steady state is measured
    if args.gc_freeze:  # what the warm-up built is long-lived: out of the collector's full passes
        gc.collect()
        gc.freeze()
    phases = getattr(service.engine, "phases", None)
    if phases is not None:
        phases.reset()
    GC.reset()
    cpu0, wall0 = resource.getrusage(resource.RUSAGE_SELF), time.monotonic()
    time.sleep(args.seconds)
    cpu1, wall1 = resource.getrusage(resource.RUSAGE_SELF), time.monotonic()
    spent = phases.snapshot() if phases is not None else {}
    gc_pauses = (list(GC.seconds), list(GC.count))
    with lock:
        seen = list(polls)
    batches = getattr(service.engine, "batches", None)
    written = sorted(getattr(batches, "latencies", ()))
    service.scheduler.shutdown(wait=True)
    profile = profiled_polls(service, args.profile_polls)
    raw = raw_insert_seconds(service.db, int(args.runs * args.metrics * interval / 10.0))
    service.stop()
    cpu = (cpu1.ru_utime - cpu0.ru_utime) + (cpu1.ru_stime - cpu0.ru_stime)
    # A turn is due every interval plus the scheduler's jitter (up to 10%, at most 5 s): a poll is on
    # time when it started within that (and 1 s) of the watch's previous poll; a longer gap is a late
    # poll and the turns it skipped. A watch not polled at all in the window missed all its turns.
    bound = interval + min(0.1 * interval, 5.0) + 1.0
    on_time, late, durations, samples = 0, 0, [], 0
    last: dict[str, float] = {}
    for name, t0, took, report in sorted(seen, key=lambda p: p[1]):
        if t0 >= wall1:
            break
        prev = last.get(name, wall0 - interval)
        last[name] = t0
        if t0 < wall0:
            continue
        durations.append(took)
        samples += report.samples if report is not None else 0  # filled in once written
        gap = t0 - prev
        if gap <= bound and took <= interval:
            on_time += 1
        else:
            late += 1 + max(0, int(gap // bound) - 1)
    for name in cfg.watch:
        gap = wall1 - last.get(name.name, wall0 - interval)
        late += int(gap // bound)  # turns due since the watch's last poll, not taken
    due = on_time + late
    d = sorted(durations)
    rss = rss_mb()
    malloc = pymalloc_report() + "\n" + malloc_report()  # (trims: after the RSS)
    return {
        "label": label,
        "polls": len(d),
        "on_time": on_time,
        "due": due,
        "cpu_share": cpu / (wall1 - wall0),
        "rss_mb": rss,
        "malloc": malloc,
        "p50_ms": 1000 * statistics.median(d) if d else float("nan"),
        "p99_ms": 1000 * d[int(0.99 * (len(d) - 1))] if d else float("nan"),
        "max_ms": 1000 * d[-1] if d else float("nan"),
        "written_p50_ms": 1000 * written[len(written) // 2] if written else float("nan"),
        "written_p99_ms": 1000 * written[int(0.99 * (len(written) - 1))] if written else float("nan"),
        "values_per_s": samples * args.metrics / (wall1 - wall0),
        "cpu_per_interval": cpu / (wall1 - wall0) * interval,
        "raw_per_interval": raw,
        "phases": spent,
        "gc": gc_pauses,
        "profile": profile,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--runs-per-watch", type=int, default=1, help="simulated runs per watch (a project)")
    ap.add_argument("--metrics", type=int, default=20)
    ap.add_argument("--interval", type=float, default=15.0)
    ap.add_argument("--seconds", type=float, default=90.0)
    ap.add_argument(
        "--warmup", type=float, default=None, help="seconds before measuring (default: 2 intervals)"
    )
    ap.add_argument("--profile-polls", type=int, default=100, help="polls profiled after the timed run")
    ap.add_argument("--database-url", default=None, help="also run against this server (PostgreSQL)")
    ap.add_argument("--skip-sqlite", action="store_true")
    ap.add_argument("--gc-freeze", action="store_true", help="gc.freeze() after the warm-up (an experiment)")
    args = ap.parse_args()
    args.warmup = 2 * args.interval if args.warmup is None else args.warmup
    logging.getLogger("apscheduler").setLevel(logging.ERROR)
    results = []
    if not args.skip_sqlite:
        with tempfile.TemporaryDirectory() as tmp:
            results.append(run("sqlite", f"sqlite:///{tmp}/scale.db", args))
    if args.database_url:
        with scratch_database(args.database_url) as url:
            results.append(run("postgresql", url, args))
    print(
        f"\n{args.runs} simulated runs ({args.runs_per_watch} a watch) x {args.metrics} metrics, polled "
        "every "
        f"{args.interval:g} s, measured {args.seconds:g} s after {args.warmup:g} s, on {os.cpu_count()} cores"
    )
    print(
        f"{'database':<12}{'on time/due':>14}{'CPU share':>11}{'RSS MB':>9}{'poll p50 ms':>13}{'p99 ms':>9}"
        f"{'max ms':>9}{'written p50':>12}{'p99 ms':>8}{'values/s':>10}{'vs raw INSERT':>15}"
    )
    for r in results:
        ratio = r["cpu_per_interval"] / r["raw_per_interval"]
        print(
            f"{r['label']:<12}{r['on_time']:>7}/{r['due']:<6}{r['cpu_share']:>11.1%}{r['rss_mb']:>9.0f}"
            f"{r['p50_ms']:>13.1f}{r['p99_ms']:>9.1f}{r['max_ms']:>9.1f}{r['written_p50_ms']:>12.1f}"
            f"{r['written_p99_ms']:>8.1f}{r['values_per_s']:>10.0f}"
            f"{ratio:>14.1f}x"
        )
    print(
        "poll: reading the sources and handing the results to the writer (the scheduler's job); written: "
        "from hand-in to commit (the batch)"
    )
    print(
        "vs raw INSERT: CPU seconds herowatch spends per poll interval / seconds one batched INSERT of an "
        "interval's values (run, metric, x, value) takes on the same database"
    )
    for r in results:
        print(f"\n{r['label']}: {r['malloc']}")
        print(f"{r['label']}: where a poll's time goes (ms per poll or batch; CPU = the thread's own)")
        for name, t in r["phases"].items():
            if name in ("batch size", "batches"):
                continue
            n = max(1, t.count)
            print(f"  {name:<12}{t.count:>8} x  wall {1000 * t.wall / n:>8.2f}  CPU {1000 * t.cpu / n:>8.2f}")
        (secs, counts) = r["gc"]
        print(
            "  GC pauses (gen 0/1/2): "
            + ", ".join(f"{c} x {1000 * t / max(1, c):.1f} ms" for t, c in zip(secs, counts, strict=True))
            + f" = {sum(secs):.1f} s of {args.seconds:g} s"
        )
        if "batches" in r["phases"]:
            size = r["phases"]["batch size"].count / max(1, r["phases"]["batches"].count)
            print(f"  polls per batch: {size:.1f}")
        print(r["profile"])


if __name__ == "__main__":
    main()
