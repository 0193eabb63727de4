"""CPU per run-poll, on a manual clock: bench/scale.py's simulated runs polled round after round, one
watch after another, the clock moved one poll interval between rounds, so the figure does not depend
on a scheduler or on what else the box runs (much less than a timed run's CPU share does).

Prints the process's CPU per run-poll (every thread: the pollers and the batch writer, not the
database server) over the measured rounds, and with ``--profile`` a cProfile of them (the polling
thread and the writer's), herowatch's own functions by cumulative and by own time.

    .venv/bin/python bench/poll_cpu.py --runs 1000 --runs-per-watch 100 --warmup-rounds 6 --rounds 8 \
        --database-url postgresql://postgres@127.0.0.1:5432/postgres [--profile]

With --database-url it uses a scratch database on that server (dropped after), as bench/scale.py does.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import logging
import pstats
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import profiled_writer  # noqa: E402
from scale import config, scratch_database  # noqa: E402

from alerts.clock import ManualClock  # noqa: E402
from monitor.config.loader import parse_config  # noqa: E402
from monitor.service import build_service  # noqa: E402
from monitor.settings import Settings  # noqa: E402


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def measure(url: str, args: argparse.Namespace) -> tuple[float, float, str]:
    cfg = parse_config(config(args.runs, args.runs_per_watch, args.metrics, args.interval))
    clock = ManualClock(1_800_000_000.0)
    service = build_service(cfg, Settings(database_url=url), clock, auto_migrate=True)
    engine = service.engine
    names = list(engine.watches)

    def round_() -> None:
        clock.advance(args.interval)
        for name in names:
            engine.poll(name)

    try:
        for _ in range(args.warmup_rounds):
            round_()
        reader, writer = cProfile.Profile(), cProfile.Profile()
        real_write = engine.batches._write
        if args.profile:
            engine.batches._write = profiled_writer(engine.batches, writer)
            reader.enable()
        c0, w0 = cpu(), time.perf_counter()
        for _ in range(args.rounds):
            round_()
        c1, w1 = cpu(), time.perf_counter()
        if args.profile:
            reader.disable()
            engine.batches._write = real_write
        text = ""
        if args.profile:
            out = io.StringIO()
            stats = pstats.Stats(reader, stream=out)
            stats.add(writer)
            stats.sort_stats("cumulative").print_stats(r"(monitor|alerts)/", args.lines)
            stats.sort_stats("tottime").print_stats(args.lines)
            root = str(Path(__file__).resolve().parents[1]) + "/"
            text = out.getvalue().replace(root, "")
        run_polls = args.runs * args.rounds
        return 1e6 * (c1 - c0) / run_polls, 1e6 * (w1 - w0) / run_polls, text
    finally:
        service.stop() if service.scheduler is not None else engine.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--runs-per-watch", type=int, default=100)
    ap.add_argument("--metrics", type=int, default=20)
    ap.add_argument("--interval", type=float, default=15.0)
    ap.add_argument("--warmup-rounds", type=int, default=6)
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--database-url", default=None, help="PostgreSQL (a scratch database); default SQLite")
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--lines", type=int, default=40)
    ap.add_argument(
        "--checkpoint-seconds", type=float, default=None, help="an experiment: save state so seldom"
    )
    args = ap.parse_args()
    logging.getLogger("apscheduler").setLevel(logging.ERROR)
    if args.checkpoint_seconds is not None:
        from monitor.engine import cycle

        cycle.CHECKPOINT_SECONDS = args.checkpoint_seconds
    if args.database_url:
        with scratch_database(args.database_url) as url:
            per, wall, text = measure(url, args)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            per, wall, text = measure(f"sqlite:///{tmp}/poll_cpu.db", args)
    if text:
        print(text)
    print(
        f"{args.runs} runs ({args.runs_per_watch} a watch), {args.rounds} rounds after {args.warmup_rounds}: "
        f"{per:.0f} us CPU per run-poll ({wall:.0f} us wall)"
    )


if __name__ == "__main__":
    main()
