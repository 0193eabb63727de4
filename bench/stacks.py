"""What a stack capture costs, and how long from a hang to the page that names the culprit.

1. Capture cost: N plain-Python ranks (``tests/live/stacks_job.py``) on this machine, captured with the
   wrapper's own code (``monitor.stacks.capture``: py-spy per process, ``--parallel`` at a time); printed
   per rank and for the node, against the time a hang's first page waits for the answers (the hold).
2. Hang -> page: ``herowatch serve`` with a push watch (stall floor 6 s), 8 wrappers x 8 ranks, rank 17
   stuck in a read; seconds from the last step to the first page in the Slack stand-in that names rank
   17, against the stall limit + 60 s the issue allows.
3. Flight recorder: reading and digesting N ranks' JSON dumps of ``--fr-entries`` entries each
   (``monitor.stacks.flight_read``, as a wrapper does on a capture) and naming the stuck collective.

    python bench/stacks.py --ranks 8 16 32
    python bench/stacks.py --ranks 8 --no-page
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from monitor.stacks.broker import HOLD  # noqa: E402
from monitor.stacks.capture import Limits, capture, py_spy_command  # noqa: E402

JOB = str(ROOT / "tests/live/stacks_job.py")


def capture_cost(ranks: int, parallel: int) -> tuple[float, float, int]:
    job = subprocess.Popen([sys.executable, JOB, "--ranks", str(ranks), "--read", "1"])
    try:
        time.sleep(1.5 + ranks * 0.05)  # the ranks start
        t0 = time.monotonic()
        got = capture(
            os.getpid(),
            run="bench",
            capture_id="b",
            node="here",
            py_spy=py_spy_command(),
            limits=Limits(parallel=parallel),
        )
        took = time.monotonic() - t0
        per = sorted(p.seconds for p in got.processes if p.role == "rank")
        return took, per[len(per) // 2] if per else 0.0, sum(1 for p in got.processes if p.role == "rank")
    finally:
        job.terminate()
        job.wait(10)


def flight_cost(ranks: int, entries: int) -> tuple[float, int, int]:
    """Seconds to read and digest ``ranks`` dumps of ``entries`` entries, the bytes read, the bytes sent."""
    import json

    from monitor.stacks.flight import findings
    from monitor.stacks.flight_read import read_all
    from tests.stacks.fr_dumps import dump, entry

    with tempfile.TemporaryDirectory() as tmp:
        size = 0
        for r in range(ranks):
            d = dump(rank=r, world=ranks, last=entries, entered=r != 1)
            d["entries"] = [entry(i, i) for i in range(entries - 4)] + d["entries"][7:]  # + p2p, tp, stuck
            raw = json.dumps(d).encode()
            size += len(raw)
            Path(f"{tmp}/nccl_trace_rank_{r}").write_bytes(raw)
        t0 = time.monotonic()
        dumps = read_all(f"{tmp}/nccl_trace_rank_")
        said = findings(dumps)
        took = time.monotonic() - t0
        assert said and "rank 1 never entered it" in said[0], said
        return took, size, sum(len(d.model_dump_json()) for d in dumps)


def hang_to_page() -> tuple[float, float]:
    from tests.live.sources_support import source_stack
    from tests.live.support import wait_for
    from tests.live.test_stacks_live import PUSH, RULES, nodes, stop

    with tempfile.TemporaryDirectory() as tmp, source_stack(Path(tmp)) as stack:
        hw = stack.serve(stack.write_config(PUSH, RULES))
        env, procs = stack.env(), []
        try:
            procs += nodes(hw.url, "bench", 8, 8, 17, env)
            last_step = None
            while last_step is None:
                try:
                    runs = {r["id"]: r for r in hw.api("/api/runs")}
                except httpx.HTTPError:  # a machine busy starting 64 ranks answers late
                    continue
                if (runs.get("push:live/bench") or {}).get("step") == 25:
                    last_step = time.monotonic()
                time.sleep(0.1)
            page = wait_for(lambda: stack.pages("bench", "rank 17"), 120, "the page")
            limit = float(page[0].split("(limit ")[1].split("s)")[0])
            return time.monotonic() - last_step, limit
        finally:
            stop(procs)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--ranks", type=int, nargs="+", default=[8, 16])
    p.add_argument("--parallel", type=int, default=8)
    p.add_argument("--no-page", action="store_true", help="only the capture cost")
    p.add_argument("--fr-entries", type=int, default=2000, help="entries per flight recorder dump")
    args = p.parse_args()
    print(f"{'ranks':>6} {'node capture s':>15} {'median per rank s':>18} {'of the hold':>12}")
    for n in args.ranks:
        took, per, seen = capture_cost(n, args.parallel)
        print(f"{seen:>6} {took:>15.2f} {per:>18.3f} {took / HOLD:>11.1%}")
    for n in (8, 16):
        took, read, sent = flight_cost(n, args.fr_entries)
        print(
            f"flight recorder: {n} dumps of {args.fr_entries} entries ({read / 1e6:.1f} MB) read and "
            f"digested in {took:.2f}s; {sent / 1e3:.0f} kB sent"
        )
    if not args.no_page:
        took, limit = hang_to_page()
        allowed = limit + 60
        print(
            f"\nlast step -> page naming rank 17: {took:.1f}s; "
            f"allowed (limit {limit:g}s + 60s) {allowed:.0f}s; "
            f"ratio {took / allowed:.2f}"
        )


if __name__ == "__main__":
    main()
