"""The soak: the production service on PostgreSQL for a simulated month, at high speed.

200 simulated runs with incidents that recur (stalls, loss spikes, NaN, OOM kills with restarts, slow
nodes, source outages; every simulated day, or every 12 polls when polls are rarer), the real delivery
pipeline posting to a webhook receiver on 127.0.0.1, built as production builds it (``build_service``
from the YAML config), driven by a manual clock: the clock advances one poll interval at a time and the
jobs that are due then run (the polls and the source health of every watch, the reminder planner, the
outbox dispatcher until it has nothing due, and the service's GC policy: installed as ``Service.start``
installs it, its full collection every ``thaw_every`` seconds of the soak's clock). Prints per
simulated day the resident memory (RSS) and the database size, the alert history (alerts,
transitions, groups, the outbox) apart from the rest, the slowest cycles and the mean milliseconds per
cycle of the batch writer and of delivery; at the end, the cycles' real time by job and the SQL
statements delivery issued per notification.

A cycle is late when its real processing time exceeds its budget: the poll interval divided by the
speed-up the soak claims (``--days`` in ``--real-minutes``, printed). The target (issue 16): RSS growth
under 10% from day 2 to day 30, the database bounded apart from the alert history, no cycle late.

The defaults (a poll every 12 simulated hours, a step every 20 minutes) keep 200 runs x 30 days near
15 real minutes on a loaded 2-core machine, where one watch's poll costs ~100 ms of database round
trips; with a faster write path, poll more often (``--poll 1800 --step 300`` is 24x the cycles). Chart
series fill up to their bound (512 buckets per run and metric, ``monitor.storage.series``) as steps
accumulate, then halve (compaction) and fill again: the database apart from the alert history grows
until the first compaction (day 12 at the defaults), then reuses the space VACUUM frees.

What a soak covers: the month is compressed in polls as well as in time (at the defaults 60 polls a
run, 240 at ``--poll 10800``; production polls every 15 s, 172,800 polls a month), so a leak that grows
per poll rather than per sample would be weighted hundreds of times less than in production. The soak
prints how many polls it covered, then runs a tail at the production interval (``--production-poll``,
``--tail-cycles``) and extrapolates the per-poll growth of RSS and database to a month of such polls
(``bench/soak_tail.py``).

    python bench/soak.py                       # 30 days, 200 runs, PostgreSQL on 127.0.0.1
    python bench/soak.py --days 2 --runs 20    # a quick check
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


from common import rss_mb  # noqa: E402
from soak_support import (  # noqa: E402
    Receiver,
    StatementCounter,
    autovacuum_on,
    counts,
    drop_database,
    fresh_database,
    object_counts,
    sizes,
    vacuum,
)
from soak_tail import MONTH, print_extrapolation, production_tail  # noqa: E402

from alerts.clock import ManualClock  # noqa: E402
from monitor.config.loader import parse_config  # noqa: E402
from monitor.service import build_service  # noqa: E402
from monitor.settings import Settings  # noqa: E402
from monitor.storage import outbox_store  # noqa: E402

DAY = 86_400.0
# the alert history: what grows with the alerts raised (kept on purpose), apart from the rest
OUTBOX_AFTER = 60.0  # simulated seconds from the polls to the outbox and reminder jobs of a cycle

# Incidents of a loop (kind, start and duration as fractions of the loop, the rest); each run's are
# shifted a little so that they do not all fire at once. The loop is a day, or 12 polls when polls are
# rarer, so that every incident outlasts a poll interval.
INCIDENTS = [
    ("stall", 0.05, 0.10, ""),
    ("loss_spike", 0.20, 0.10, "magnitude: 1.0"),
    ("nan", 0.35, 0.05, ""),
    ("oom_kill", 0.45, None, "count: 2"),
    ("restart", 0.45, None, ""),
    ("throughput_drop", 0.55, 0.10, "factor: 0.7"),
    ("outage", 0.75, 0.08, ""),
]


def incident_loop(poll: float) -> float:
    return max(DAY, 12 * poll)


def soak_config(runs: int, poll: float, step: float, hook: str) -> str:
    loop = incident_loop(poll)
    lines = ["watch:"]
    for i in range(runs):
        shift = (i % 4) * 0.03 * loop
        incidents = ", ".join(
            "{"
            + f"kind: {kind}, at: {at * loop + shift:.0f}s"
            + (f", duration: {dur * loop:.0f}s" if dur else "")
            + (f", {rest}" if rest else "")
            + "}"
            for kind, at, dur, rest in INCIDENTS
        )
        lines.append(
            f"  - name: run-{i:04d}\n"
            f"    poll_interval: {poll:g}s\n"
            f"    labels: {{team: t{i % 8}}}\n"
            f"    clock_skew_bound: {max(600.0, 3 * step):g}s\n"  # the newest row is up to a step old
            f"    rules: {{overrides: {{oom_kills: {{window: {0.1 * loop:.0f}s}}}}}}\n"
            f"    sim: {{seed: {i}, step_time: {step:g}s, checkpoint_every: 100, eval_every: 200, "
            f"checkpoint_pause: {2 * step:g}s, eval_pause: {step:g}s, restore_time: {3 * step:g}s, "
            f"repeat_every: {loop:.0f}s, incidents: [{incidents}]}}"
        )
    lines.append("rules: {packs: [hero]}")
    lines.append(f"receivers: [{{name: hook, kind: webhook, url: '{hook}'}}]")
    lines.append("route: {receiver: hook, group_by: [run]}")
    return "\n".join(lines) + "\n"


def deliver(service) -> None:  # noqa: ANN001
    """The outbox job, as often as it finds work (a claimed row may be merged or dropped, not sent)."""
    for _ in range(1000):
        service.dispatcher.run_once()
        with service.sessions() as s:
            if not outbox_store.due(s, service.clock.time(), 1):
                return


def main() -> None:  # noqa: PLR0915
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--days", type=float, default=30.0)
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--poll", type=float, default=43200.0, help="poll interval, simulated seconds")
    ap.add_argument("--step", type=float, default=1200.0, help="a simulated step takes this long")
    ap.add_argument(
        "--real-minutes",
        type=float,
        default=15.0,
        help="the soak claims to simulate --days in this long: a cycle's budget is the poll interval "
        "divided by that speed-up",
    )
    ap.add_argument(
        "--database-url",
        default="postgresql://postgres@127.0.0.1:5432/postgres",
        help="a server to create (and drop) the soak's own database on",
    )
    ap.add_argument("--db-name", default="herowatch_soak")
    ap.add_argument("--keep", action="store_true", help="keep the soak database afterwards")
    ap.add_argument(
        "--tracemalloc", action="store_true", help="print where memory grew from day 2 to the end (slow)"
    )
    ap.add_argument(
        "--vacuum",
        choices=("auto", "on", "off"),
        default="auto",
        help="VACUUM the soak database once a simulated day (auto: when the server's autovacuum is off)",
    )
    ap.add_argument(
        "--objects", action="store_true", help="print the object types whose count grew from day 2 on"
    )
    ap.add_argument("--production-poll", type=float, default=15.0, help="the tail's poll interval, s")
    ap.add_argument(
        "--tail-cycles",
        type=int,
        default=60,
        help="cycles at the production interval after the month (0: none)",
    )
    args = ap.parse_args()

    if args.tracemalloc:
        tracemalloc.start(6)
    receiver = Receiver()
    url = fresh_database(args.database_url, args.db_name)
    clock = ManualClock(1_700_000_000.0)
    cfg = parse_config(soak_config(args.runs, args.poll, args.step, receiver.url))
    service = build_service(cfg, Settings(database_url=url), clock, auto_migrate=True)
    speedup = args.days * DAY / (60 * args.real_minutes)
    engine, budget = service.engine, args.poll / speedup
    engine.resume()
    # the running service's GC policy (Service.start installs it and runs its full collection every
    # thaw_every seconds): installed here too, its full collection on the soak's clock
    service.gc_policy.install()
    next_thaw = clock.time() + service.gc_policy.thaw_every
    names = list(engine.watches)
    do_vacuum = args.vacuum == "on" or (args.vacuum == "auto" and not autovacuum_on(service.db))
    cycles_per_day = round(DAY / args.poll)
    days = round(args.days)
    print(
        f"soak: {args.runs} simulated runs on PostgreSQL, {days} simulated days, polled every "
        f"{args.poll:g} s ({cycles_per_day} cycles a day), a step every {args.step:g} s, incidents "
        f"every {incident_loop(args.poll) / 3600:g} h; a cycle's budget {budget * 1000:.0f} ms real (poll "
        f"interval / {speedup:.0f}x: {args.days:g} days in {args.real_minutes:g} min)"
    )
    covered = cycles_per_day * days
    print(
        f"polls covered: {covered} a run ({covered * args.runs:,} in all); production at one poll "
        f"every {args.production_poll:g} s makes {MONTH / args.production_poll:,.0f} a run in a month, "
        f"so a leak per poll weighs {MONTH / args.production_poll / covered:,.0f}x less here: "
        "the tail after the month measures it"
    )
    if do_vacuum:
        print("the server's autovacuum is off: the soak runs VACUUM once a simulated day, as it would")
    print(
        f"{'day':>4}{'RSS MB':>9}{'DB MB':>8}{'history':>9}{'rest':>7}{'alerts':>8}{'outbox':>8}"
        f"{'sent':>7}{'buckets':>9}{'late':>6}{'cycle p50':>11}{'max ms':>8}{'real s':>8}"
        f"{'writer':>8}{'deliver':>8}"
    )
    late, worst, started = 0, 0.0, time.monotonic()
    # where the cycles' real time goes, job by job (the writer's share is what the polls wait for)
    jobs = dict.fromkeys(("polls handed in", "batch writer", "health and reminders", "delivery", "gc"), 0.0)
    per_day: list[dict] = []
    statements = StatementCounter(service.db)
    # delivery's statements and notifications sent, summed, and in its busiest cycle
    told = {"statements": 0, "sent": 0, "busiest": (0, 0)}
    try:
        for day in range(1, days + 1):
            cycle_times = []
            t_day = time.monotonic()
            jobs_before = dict(jobs)  # the day's mean per cycle of the batch writer and delivery, printed
            for _ in range(cycles_per_day):
                clock.advance(args.poll - OUTBOX_AFTER)
                t0 = time.perf_counter()
                for name in names:  # as the scheduler's jobs do: hand over to the batch writer
                    engine.poll(name, wait=False)
                t1 = time.perf_counter()
                engine.batches.drain()
                t2 = time.perf_counter()
                engine.check_health()  # the one health job, for every watch
                clock.advance(OUTBOX_AFTER)  # the group_wait of what the polls raised has passed
                service.plan_repeats()
                t3 = time.perf_counter()
                before, sent_before = statements.n, receiver.count
                deliver(service)
                t4 = time.perf_counter()
                if clock.time() >= next_thaw:  # the service's "gc" job, when it is due
                    service.gc_policy.full_collection()
                    while next_thaw <= clock.time():
                        next_thaw += service.gc_policy.thaw_every
                n_stmt, n_sent = statements.n - before, receiver.count - sent_before
                told["statements"] += n_stmt
                told["sent"] += n_sent
                told["busiest"] = max(told["busiest"], (n_sent, n_stmt))
                dt = time.perf_counter() - t0
                for job, took in zip(jobs, (t1 - t0, t2 - t1, t3 - t2, t4 - t3, t0 + dt - t4), strict=True):
                    jobs[job] += took
                cycle_times.append(dt)
                late += dt > budget
                worst = max(worst, dt)
            gc.collect()
            if do_vacuum:
                vacuum(service.db)
            total, history, rest, tables = sizes(service.db)
            n = counts(service.db)
            cycle_times.sort()
            row = {
                "day": day,
                "rss": rss_mb(),
                "db": total,
                "history": history,
                "rest": rest,
                "tables": tables,
                **n,
                "p50": cycle_times[len(cycle_times) // 2],
                "max": cycle_times[-1],
            }
            per_day.append(row)
            if args.tracemalloc and day == min(2, days):
                snapshot = tracemalloc.take_snapshot()
            if args.objects and day == min(2, days):
                objects = object_counts()
            if day == days:  # the end, counted while the service still runs (stopping adds objects)
                final_objects = object_counts() if args.objects else {}
                final_snapshot = tracemalloc.take_snapshot() if args.tracemalloc else None
            print(
                f"{day:>4}{row['rss']:>9.1f}{total:>8.1f}{history:>9.1f}{rest:>7.1f}{n['alerts']:>8}"
                f"{n['notifications']:>8}{receiver.count:>7}{n['series_buckets']:>9}{late:>6}"
                f"{row['p50'] * 1000:>11.0f}{row['max'] * 1000:>8.0f}{time.monotonic() - t_day:>8.1f}"
                + "".join(
                    f"{(jobs[j] - jobs_before[j]) / cycles_per_day * 1000:>8.0f}"
                    for j in ("batch writer", "delivery")
                ),
                flush=True,
            )
        if args.tail_cycles > 0:

            def tail_cycle(poll: float) -> None:
                clock.advance(poll)
                for name in names:
                    engine.poll(name, wait=False)
                engine.batches.drain()
                engine.check_health()
                service.plan_repeats()
                deliver(service)

            tail = production_tail(tail_cycle, service.db, args.production_poll, args.tail_cycles, args.runs)
    finally:
        service.stop()
        receiver.close()
        if not args.keep:
            drop_database(args.database_url, args.db_name)
    report(per_day, late, worst, budget, days * cycles_per_day, time.monotonic() - started, receiver)
    if args.tail_cycles > 0:
        print_extrapolation(tail[0], tail[1], args.production_poll, per_day[-1]["rss"])
    total = sum(jobs.values()) or 1.0
    print(
        "cycles' real time by job: " + ", ".join(f"{j} {t:.1f} s ({t / total:.0%})" for j, t in jobs.items())
    )
    busiest_sent, busiest_stmt = told["busiest"]
    print(
        f"delivery's SQL statements: {told['statements']} for {told['sent']} notifications sent "
        f"({told['statements'] / max(told['sent'], 1):.1f} per notification); the busiest cycle "
        f"{busiest_stmt} for {busiest_sent}"
    )
    if args.objects:
        grown = sorted(((n - objects.get(t, 0), t) for t, n in final_objects.items()), reverse=True)[:12]
        print("object counts grown since day 2: " + ", ".join(f"{t} {d:+d}" for d, t in grown if d > 0))
    if args.tracemalloc:
        grown = final_snapshot.compare_to(snapshot, "traceback")
        print("memory grown since day 2, by where it was allocated:")
        for stat in grown[:8]:
            print(f"  {stat.size_diff / 1024:+.0f} KiB in {stat.count_diff:+d} blocks")
            for line in stat.traceback.format()[-12:]:
                print("    " + line)


def report(per_day: list[dict], late: int, worst: float, budget: float, cycles: int, real: float, rx) -> None:  # noqa: ANN001
    print()
    base = per_day[1] if len(per_day) > 2 else per_day[0]  # after the warm-up day (a short soak: day 1)
    last = per_day[-1]
    growth = last["rss"] / base["rss"] - 1
    print(
        f"RSS day {base['day']} {base['rss']:.1f} MB -> day {last['day']} {last['rss']:.1f} MB: "
        f"growth {growth:+.1%}, limit +10%: {abs(growth) / 0.10:.2f}x the bar"
    )
    rest_growth = last["rest"] - base["rest"]
    print(
        f"database apart from the alert history: day {base['day']} {base['rest']:.1f} MB -> "
        f"day {last['day']} {last['rest']:.1f} MB ({rest_growth:+.1f} MB); alert history "
        f"{base['history']:.1f} -> {last['history']:.1f} MB"
    )
    print(
        f"late cycles: {late} of {cycles} (budget {budget * 1000:.0f} ms); worst cycle "
        f"{worst * 1000:.0f} ms = {worst / budget:.2f}x the budget; {real:.0f} s real in all"
    )
    print(f"notifications delivered to the webhook: {rx.count} {dict(sorted(rx.kinds.items()))}")
    grown = sorted(
        ((t, last["tables"].get(t, 0) - base["tables"].get(t, 0)) for t in last["tables"]),
        key=lambda kv: -kv[1],
    )[:8]
    print(
        "tables that grew most from day "
        f"{base['day']}: " + ", ".join(f"{t} {d / 2**20:+.1f} MB" for t, d in grown if d)
    )


if __name__ == "__main__":
    main()
