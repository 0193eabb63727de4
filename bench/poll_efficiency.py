"""How many requests and bytes one poll cycle of the W&B source costs.

The real ``wandb`` client against the local stand-in (tests/standins/wandb_server.py): 100 watched runs in
one project, 10 of them advancing (15 steps each, a 15 s poll at one step a second) before every cycle.
The bar: at most 1 + 10 requests a cycle (one run listing, one history read per advanced run), plus a
listing page per further ``per_page`` runs. For comparison, one cycle of the same reads done with the
client's ``Run.scan_history(min_step=...)``.

    .venv/bin/python bench/poll_efficiency.py [--runs 100] [--advancing 10] [--cycles 5] [--per-page 100]

Bytes are those of the HTTP bodies, uncompressed (the real service gzips its answers).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from monitor.settings import Settings  # noqa: E402
from monitor.sources.base import PollResult, Target  # noqa: E402
from monitor.sources.wandb_client import prepare_environment  # noqa: E402
from monitor.sources.wandb_config import WandbTarget  # noqa: E402
from monitor.sources.wandb_source import WandbSource  # noqa: E402
from tests.standins.wandb_server import WandbStandin  # noqa: E402

KEY = "bench00" + "0123456789ab" * 4  # fake
ENTITY, PROJECT = "hero-team", "pretrain"


def levanter_row(step: int) -> dict[str, float]:
    loss = 2.1 + 8.4 / math.sqrt(1.0 + step / 150.0)
    return {
        "train/loss": loss,
        "global_step": step,
        "throughput/tokens_per_second": 412_000.0 + (step % 7) * 900.0,
        "throughput/mfu": 41.7,
        "throughput/duration": 10.2,
        "grad/norm/total": 0.24,
        "optim/learning_rate": 3e-4,
        "optim/skipped_step": 0,
        "moe/drop_fraction": 0.011,
        "train/router/routing_entropy_mean": 2.71,
    }


def wire(server: WandbStandin) -> tuple[int, Counter[str], int, int, list[tuple[str, int, int]]]:
    reqs = list(server.requests)
    ops = Counter(r.operation for r in reqs)
    return (
        len(reqs),
        ops,
        sum(r.bytes_in for r in reqs),
        sum(r.bytes_out for r in reqs),
        server.history_ranges(),
    )


def by_operation(server: WandbStandin) -> str:
    """Requests and bytes received, per operation."""
    n: Counter[str] = Counter()
    got: Counter[str] = Counter()
    for r in list(server.requests):
        n[r.operation] += 1
        got[r.operation] += r.bytes_out
    return ", ".join(f"{op} {n[op]} / {got[op]:,} B" for op in sorted(n))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--advancing", type=int, default=10)
    ap.add_argument("--cycles", type=int, default=5)
    ap.add_argument("--steps-per-cycle", type=int, default=15)
    ap.add_argument("--history", type=int, default=1500, help="steps each run has before herowatch starts")
    ap.add_argument("--per-page", type=int, default=100)
    args = ap.parse_args()

    with WandbStandin(KEY, entity=ENTITY) as server:
        run_ids = [f"hero{i:03d}" for i in range(args.runs)]
        for rid in run_ids:
            server.add_run(PROJECT, rid, display_name=f"hero-{rid}", tags=["hero"])
            server.log(PROJECT, rid, ({"_step": s, **levanter_row(s)} for s in range(args.history)))
        server.add_run(PROJECT, "ablation", tags=["ablation"])  # not selected
        cfg = WandbTarget(
            entity=ENTITY,
            project=PROJECT,
            tags=["hero"],
            base_url=server.url,
            per_page=args.per_page,
            timeout=30,
        )
        source = WandbSource(Settings(WANDB_API_KEY=KEY))
        target = Target("bench", cfg)
        cursors: dict[str, dict] = {}
        last_step = dict.fromkeys(run_ids, args.history - 1)

        def cycle(label: str) -> PollResult:
            server.reset_requests()
            t0 = time.perf_counter()
            res = source.poll(target, dict(cursors), server.clock)
            wall = time.perf_counter() - t0
            if res.error:
                raise SystemExit(f"poll failed: {res.error}")
            cursors.update(res.cursors)
            n, ops, b_in, b_out, _ = wire(server)
            rows = sum(1 for s in res.samples if s.step is not None)
            print(
                f"{label:<12} {n:>4} requests, {b_in:>7,} B sent, {b_out:>10,} B received, {rows:>6} rows, "
                f"{wall * 1000:7.1f} ms  [{by_operation(server)}]"
            )
            return res

        print(
            f"{args.runs} watched runs, {args.advancing} advancing {args.steps_per_cycle} steps a cycle, "
            f"per_page={args.per_page}, history page {cfg.history_page_size} steps, "
            f"warm-up {cfg.warmup_steps}"
        )
        cycle("first sight")
        worst, ok = 0, True
        for c in range(args.cycles):
            movers = [run_ids[(c * args.advancing + i) % args.runs] for i in range(args.advancing)]
            for rid in movers:
                start = last_step[rid] + 1
                server.log(
                    PROJECT,
                    rid,
                    ({"_step": s, **levanter_row(s)} for s in range(start, start + args.steps_per_cycle)),
                )
                last_step[rid] = start + args.steps_per_cycle - 1
            cycle(f"cycle {c + 1}")
            n, ops, _, _, ranges = wire(server)
            worst = max(worst, n)
            pages = math.ceil(args.runs / args.per_page)
            ok &= ops["HistoryPage"] <= args.advancing and n <= pages + args.advancing
            ok &= sorted(r for r, _, _ in ranges) == sorted(movers)
        pages = math.ceil(args.runs / args.per_page)
        print(
            f"steady state: at most {worst} requests a cycle; bar {pages} listing page(s) + {args.advancing} "
            f"= {pages + args.advancing}: {'met' if ok else 'NOT MET'}; history reads only for the runs "
            f"that advanced: {'yes' if ok else 'NO'}"
        )

        # the same cycle through the client's scan_history, for comparison
        prepare_environment()
        import wandb

        api = wandb.Api(overrides={"base_url": server.url}, api_key=KEY, timeout=30)
        movers = run_ids[: args.advancing]
        for rid in movers:
            start = last_step[rid] + 1
            server.log(
                PROJECT,
                rid,
                ({"_step": s, **levanter_row(s)} for s in range(start, start + args.steps_per_cycle)),
            )
        server.reset_requests()
        t0 = time.perf_counter()
        runs = {
            r.id: r
            for r in api.runs(
                f"{ENTITY}/{PROJECT}", filters={"tags": {"$in": ["hero"]}}, per_page=args.per_page
            )
        }
        got = sum(len(list(runs[rid].scan_history(min_step=last_step[rid] + 1))) for rid in movers)
        wall = time.perf_counter() - t0
        n, _, b_in, b_out, _ = wire(server)
        print(
            f"{'scan_history':<12} {n:>4} requests, {b_in:>7,} B sent, {b_out:>10,} B received, "
            f"{got:>6} rows, {wall * 1000:7.1f} ms  [{by_operation(server)}]"
        )
        print("(scan_history: the client's own way, for comparison only; the source does not use it)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
