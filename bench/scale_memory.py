"""Where a replica's memory goes, per run: N simulated runs polled K times on a manual clock, then the
bytes still allocated, by the source line that allocated them (tracemalloc), divided by the runs.

    python bench/scale_memory.py --runs 1000 --database-url postgresql://postgres@127.0.0.1/postgres
    python bench/scale_memory.py --runs 10000 --runs-per-watch 100 --database-url ...

The polls run one after another, as fast as they go (the clock moves by the poll interval between
rounds), so the figures say what is held, not how fast; bench/scale.py measures the time. The
baseline is taken after the service is built (config, rules, imports), before the first poll: what
remains is what the runs cost.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import logging
import pstats
import sys
import tempfile
import threading
import time
import tracemalloc
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from common import profiled_writer, pymalloc_report, rss_mb  # noqa: E402
from scale import config, scratch_database  # noqa: E402

from alerts.clock import ManualClock  # noqa: E402
from monitor.config.loader import parse_config  # noqa: E402
from monitor.service import build_service  # noqa: E402
from monitor.settings import Settings  # noqa: E402

ROOT = str(Path(__file__).resolve().parents[1]) + "/"


def component(filename: str) -> str:
    """The part of the code (monitor/engine, sqlalchemy, ...) a source file belongs to."""
    if filename.startswith(ROOT):
        parts = filename[len(ROOT) :].split("/")
        return "/".join(parts[:2]) if len(parts) > 2 else parts[0]
    for lib in ("sqlalchemy", "psycopg", "pydantic", "apscheduler", "json", "threading", "concurrent"):
        if f"/{lib}/" in filename or filename.endswith(f"/{lib}.py"):
            return lib
    return "other: " + filename.rsplit("/", 1)[-1]


def measure(url: str, args: argparse.Namespace) -> None:
    clock = ManualClock(time.time())
    cfg = parse_config(config(args.runs, args.runs_per_watch, args.metrics, args.interval))
    service = build_service(cfg, Settings(database_url=url), clock, auto_migrate=True)
    engine = service.engine
    if not args.no_gc_policy:  # as the service does (``Service.start``): full collections freeze survivors
        service.gc_policy.install()
    gc.collect()
    rss0 = rss_mb()
    if not args.no_trace:
        tracemalloc.start(args.frames)
    before = tracemalloc.take_snapshot() if not args.no_trace else None
    t0 = time.perf_counter()
    profiler = cProfile.Profile(time.thread_time)  # CPU of the writer thread: no waits, less of the load
    real_write = engine.batches._write
    profiled_write = profiled_writer(engine.batches, profiler)

    gc_cpu, started = [0.0, 0.0, 0.0], threading.local()

    def on_gc(phase: str, info: dict) -> None:  # the collections' CPU, in the thread that runs each
        if phase == "start":
            started.t = time.thread_time()
        else:
            gc_cpu[info["generation"]] += time.thread_time() - started.t

    gc.callbacks.append(on_gc)
    for i in range(args.polls):
        last = i == args.polls - 1  # the steady state: every run known, its state warm
        if last:
            if args.profile:
                engine.batches._write = profiled_write
            cpu0 = time.process_time()
            gc0 = list(gc_cpu), list(service.gc_policy.pauses)
        for name in engine.watches:
            engine.poll(name)
        if last:
            engine.batches._write = real_write
            cpu = time.process_time() - cpu0
            how = "cProfile'd writer included" if args.profile else "the process, not profiled"
            print(f"  the last round: {1000 * cpu / args.runs:.2f} ms of CPU a run ({how})")
            gc_s = [b - a for a, b in zip(gc0[0], gc_cpu, strict=True)]
            gc_n = [b - a for a, b in zip(gc0[1], service.gc_policy.pauses, strict=True)]
            each = " / ".join(f"{n} in {1000 * t:.0f} ms" for n, t in zip(gc_n, gc_s, strict=True))
            print(
                f"  of it in garbage collections (CPU): {1000 * sum(gc_s) / args.runs:.2f} ms a run"
                f" ({each}, gen 0/1/2)"
            )
        clock.advance(args.interval)
        print(
            f"  round {i + 1}/{args.polls}: {time.perf_counter() - t0:.0f} s, RSS {rss_mb():.0f} MB",
            flush=True,
        )
    engine.batches.drain()
    gc.collect()
    rss1 = rss_mb()
    runs = args.runs
    if args.profile:
        if args.dump:
            profiler.dump_stats(args.dump)
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats(args.sort).print_stats(r"(monitor|alerts)/", args.top)
        print(out.getvalue().replace(ROOT, ""))
    if args.no_trace:
        print(f"RSS {rss0:.0f} -> {rss1:.0f} MB ({1e6 * (rss1 - rss0) / runs / 1.048576:,.0f} B a run)")
        print(pymalloc_report())
        service.stop()
        return
    after = tracemalloc.take_snapshot()
    stats = after.compare_to(before, "lineno")
    total = sum(s.size_diff for s in stats)
    print(
        f"\n{runs} runs ({args.runs_per_watch} a watch) x {args.metrics} metrics, {args.polls} polls each: "
        f"RSS {rss0:.0f} -> {rss1:.0f} MB ({1e6 * (rss1 - rss0) / runs / 1.048576:,.0f} B a run, "
        f"tracemalloc'd itself included); traced {total / 2**20:.1f} MB = {total / runs:,.0f} B a run"
    )
    by_part: dict[str, int] = defaultdict(int)
    for s in stats:
        by_part[component(s.traceback[0].filename)] += s.size_diff
    print("\nby component (bytes a run):")
    for part, size in sorted(by_part.items(), key=lambda kv: -kv[1])[:15]:
        print(f"  {size / runs:>10,.0f}  {part}")
    by_file: dict[str, int] = defaultdict(int)
    for s in stats:
        by_file[s.traceback[0].filename.replace(ROOT, "")] += s.size_diff
    print("\nby file (bytes a run):")
    for name, size in sorted(by_file.items(), key=lambda kv: -kv[1])[:20]:
        print(f"  {size / runs:>10,.0f}  {name}")
    print(f"\ntop {args.top} lines (bytes a run, blocks a run):")
    for s in stats[: args.top]:
        frame = s.traceback[0]
        where = frame.filename.replace(ROOT, "")
        print(f"  {s.size_diff / runs:>10,.0f} {s.count_diff / runs:>7.1f}  {where}:{frame.lineno}")
    service.stop()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--runs-per-watch", type=int, default=1)
    ap.add_argument("--metrics", type=int, default=20)
    ap.add_argument("--interval", type=float, default=15.0)
    ap.add_argument("--polls", type=int, default=6, help="polls of each watch")
    ap.add_argument("--frames", type=int, default=1, help="traceback frames tracemalloc keeps")
    ap.add_argument("--top", type=int, default=30)
    ap.add_argument("--profile", action="store_true", help="cProfile the writer during the last round")
    ap.add_argument("--dump", default=None, help="also write the profile to this file (pstats)")
    ap.add_argument("--sort", default="cumulative", help="the profile's order (cumulative, tottime)")
    ap.add_argument("--no-trace", action="store_true", help="without tracemalloc (RSS only; faster)")
    ap.add_argument("--database-url", default=None, help="PostgreSQL server (default: a SQLite file)")
    ap.add_argument("--no-gc-policy", action="store_true", help="without the service's GC policy (as before)")
    args = ap.parse_args()
    logging.getLogger("apscheduler").setLevel(logging.ERROR)
    if args.database_url:
        with scratch_database(args.database_url) as url:
            measure(url, args)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            measure(f"sqlite:///{tmp}/scale.db", args)


if __name__ == "__main__":
    main()
