"""Load on the status API and the overview page, next to a static file of the same size, side by side.

    .venv/bin/python bench/api_load.py                 # 200 runs in a fresh SQLite file
    .venv/bin/python bench/api_load.py --runs 500 --seconds 10 --connections 1,32
    .venv/bin/python bench/api_load.py --database-url postgresql://postgres@127.0.0.1:5432/bench_db

It fills a database with realistic runs (stats with goodput from a few hundred samples each, three
chart series of 512 min/max buckets each, firing and pending alerts with their transitions, active
silences), serves the real app with uvicorn on 127.0.0.1 in a separate process (one worker, as
`herowatch serve` runs), and loads each target in turn for a fixed time with wrk (if installed:
`apt-get install wrk`) or else httpx from threads. Every target is also compared with a static file
of exactly its size served by the same server: the framework's floor. Traffic goes to 127.0.0.1 only
and every load is bounded in time.
"""

from __future__ import annotations

import argparse
import math
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from alerts.clock import ManualClock  # noqa: E402
from monitor.runs.run_stats import RunStats  # noqa: E402
from monitor.settings import Settings  # noqa: E402
from monitor.storage import migrate  # noqa: E402
from monitor.storage.db import make_engine, make_sessionmaker  # noqa: E402
from monitor.storage.models import (  # noqa: E402
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


# ---- the server (a child process) ---------------------------------------------------------------
def serve(url: str, port: int, static_dir: str) -> None:
    import uvicorn
    from fastapi.staticfiles import StaticFiles

    from monitor.web.app import create_app
    from monitor.web.context import ApiContext

    engine = make_engine(url)
    ctx = ApiContext(
        sessions=make_sessionmaker(engine),
        clock=ManualClock(NOW),
        settings=Settings(database_url=url),
        poll_intervals={"bench": 60.0},
    )
    app = create_app(ctx)
    app.mount("/bench-static", StaticFiles(directory=static_dir), name="bench-static")
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)


# ---- the load -----------------------------------------------------------------------------------
def _seconds(text: str) -> float:
    m = re.fullmatch(r"([\d.]+)(us|ms|s|m)", text)
    if not m:
        raise ValueError(text)
    return float(m.group(1)) * {"us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0}[m.group(2)]


def load_wrk(url: str, seconds: int, connections: int, threads: int) -> dict:
    out = subprocess.run(
        ["wrk", f"-t{threads}", f"-c{connections}", f"-d{seconds}s", "--timeout", "60s", "--latency", url],
        capture_output=True,
        text=True,
        timeout=seconds + 30,
        check=True,
    ).stdout
    pct = dict(re.findall(r"^\s+(50|99)%\s+(\S+)", out, re.M))
    total = int(re.search(r"(\d+) requests in", out).group(1))
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    return {
        "rps": float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1)),
        "p50": _seconds(pct["50"]),
        "p99": _seconds(pct["99"]),
        "n": total,
        "errors": int(errors.group(1)) if errors else 0,
    }


def load_httpx(url: str, seconds: int, connections: int, threads: int) -> dict:
    latencies: list[float] = []
    errors = [0]
    lock = threading.Lock()
    stop_at = time.perf_counter() + seconds

    def worker() -> None:
        mine, bad = [], 0
        with httpx.Client(timeout=30) as c:
            while time.perf_counter() < stop_at:
                t = time.perf_counter()
                r = c.get(url)
                mine.append(time.perf_counter() - t)
                bad += r.status_code != 200
        with lock:
            latencies.extend(mine)
            errors[0] += bad

    started = time.perf_counter()
    pool = [threading.Thread(target=worker) for _ in range(connections)]
    for th in pool:
        th.start()
    for th in pool:
        th.join()
    elapsed = time.perf_counter() - started
    q = statistics.quantiles(latencies, n=100)
    return {
        "rps": len(latencies) / elapsed,
        "p50": q[49],
        "p99": q[98],
        "n": len(latencies),
        "errors": errors[0],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--seconds", type=int, default=6, help="load per target")
    ap.add_argument("--connections", default="1,16", help="concurrent connections; a comma list runs each")
    ap.add_argument("--threads", type=int, default=2, help="wrk threads")
    ap.add_argument("--client", choices=["auto", "wrk", "httpx"], default="auto")
    ap.add_argument("--database-url", help="default: a fresh SQLite file in a temporary folder")
    ap.add_argument("--serve", nargs=3, metavar=("URL", "PORT", "STATIC_DIR"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.serve:
        serve(args.serve[0], int(args.serve[1]), args.serve[2])
        return
    client = args.client if args.client != "auto" else ("wrk" if shutil.which("wrk") else "httpx")
    load = load_wrk if client == "wrk" else load_httpx
    with tempfile.TemporaryDirectory(prefix="herowatch-bench-") as tmp:
        url = args.database_url or f"sqlite:///{tmp}/bench.db"
        fill(url, args.runs)
        static = Path(tmp, "static")
        static.mkdir()
        import socket

        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        base = f"http://127.0.0.1:{port}"
        server = subprocess.Popen([sys.executable, __file__, "--serve", url, str(port), str(static)])
        try:
            deadline = time.monotonic() + 30
            while True:
                try:
                    httpx.get(base + "/healthz", timeout=1).raise_for_status()
                    break
                except httpx.HTTPError:
                    if time.monotonic() > deadline or server.poll() is not None:
                        raise SystemExit("the server did not start") from None
                    time.sleep(0.1)
            targets = [
                ("GET /api/runs", "/api/runs", "runs.json"),
                ("GET / (overview)", "/", "overview.html"),
            ]
            rows = []
            for label, path, twin in targets:
                body = httpx.get(base + path, timeout=30).content  # also warms the caches
                assert path != "/api/runs" or len(httpx.get(base + path).json()) == args.runs
                Path(static, twin).write_bytes(b"x" * len(body))
                for conns in (int(c) for c in args.connections.split(",")):
                    for name, target in (
                        (label, path),
                        ("  static file, same size", f"/bench-static/{twin}"),
                    ):
                        for _ in range(5):
                            httpx.get(base + target, timeout=30)
                        r = load(base + target, args.seconds, conns, min(args.threads, conns))
                        rows.append((name, conns, len(body), r))
        finally:
            server.terminate()
            server.wait(15)
    print(
        f"\n{args.runs} runs, load by {client}, {args.seconds}s per line, uvicorn (1 worker) on 127.0.0.1, "
        f"database {url.split(':')[0]}, {sys.platform}, {os.cpu_count()} CPUs"
    )
    print(
        f"{'target':30} {'conns':>5} {'bytes':>9} {'req/s':>8} {'p50 ms':>8} {'p99 ms':>8} "
        f"{'requests':>8} {'errors':>6}"
    )
    for name, conns, size, r in rows:
        print(
            f"{name:30} {conns:>5} {size:>9,} {r['rps']:>8.1f} {r['p50'] * 1e3:>8.1f} {r['p99'] * 1e3:>8.1f} "
            f"{r['n']:>8,} {r['errors']:>6}"
        )


if __name__ == "__main__":
    main()
