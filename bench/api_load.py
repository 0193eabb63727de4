"""Load on the status API and the overview page, next to a static file of the same size, side by side.

    .venv/bin/python bench/api_load.py                 # 200 runs in a fresh SQLite file
    .venv/bin/python bench/api_load.py --runs 500 --seconds 10 --connections 1,32
    .venv/bin/python bench/api_load.py --database-url postgresql://postgres@127.0.0.1:5432/bench_db

It fills a database with realistic runs (stats with goodput from a few hundred samples each, three
chart series of 512 min/max buckets each, firing and pending alerts with their transitions, active
silences), serves the real app with uvicorn on 127.0.0.1 in a separate process (one worker, as
`herowatch serve` runs), and loads each target in turn for a fixed time with wrk (if installed:
`apt-get install wrk`) or else httpx from threads.

The load runs while the engine writes, as in production (bench/api_load_server.py): every
``--write-every`` seconds a tenth of the runs advance and an alert changes state in one commit, so the
snapshot is rebuilt at that rate inside each measured window (the rebuilds counted in the window are
printed on each line). Each target is compared with its limit: the same bytes (its own body and ETag)
answered from memory by a minimal ASGI app mounted on the same server and middleware, so the ratio is
the price of the app's own work. The conditional lines send the ETag back (``If-None-Match``) as the
dashboard's refresh does, and are compared with the limit answering 304. Each line gets a verdict
against the stated target (req/s at least 0.5x the limit's, p99 at most 2x). Traffic goes to 127.0.0.1
only and every load is bounded in time.
"""

from __future__ import annotations

import argparse
import gzip
import os
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

from bench.api_load_server import context, serve  # noqa: E402
from bench.status_data import fill  # noqa: E402

TARGET_RPS, TARGET_P99 = 0.5, 2.0  # of the limit's: at least half its req/s, at most twice its p99


# ---- the load -----------------------------------------------------------------------------------
def _seconds(text: str) -> float:
    m = re.fullmatch(r"([\d.]+)(us|ms|s|m)", text)
    if not m:
        raise ValueError(text)
    return float(m.group(1)) * {"us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0}[m.group(2)]


def load_wrk(url: str, seconds: int, connections: int, threads: int, headers: dict[str, str]) -> dict:
    extra = [a for k, v in headers.items() for a in ("-H", f"{k}: {v}")]
    out = subprocess.run(
        [
            "wrk",
            f"-t{threads}",
            f"-c{connections}",
            f"-d{seconds}s",
            "--timeout",
            "60s",
            "--latency",
            *extra,
            url,
        ],
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


def load_httpx(url: str, seconds: int, connections: int, threads: int, headers: dict[str, str]) -> dict:
    latencies: list[float] = []
    errors = [0]
    lock = threading.Lock()
    stop_at = time.perf_counter() + seconds

    def worker() -> None:
        mine, bad = [], 0
        with httpx.Client(timeout=30, headers=headers) as c:
            while time.perf_counter() < stop_at:
                t = time.perf_counter()
                r = c.get(url)
                mine.append(time.perf_counter() - t)
                bad += r.status_code not in (200, 304)
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


def start_server(url: str, static: Path, write_every: float) -> tuple[subprocess.Popen, str]:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    base = f"http://127.0.0.1:{port}"
    server = subprocess.Popen(
        [sys.executable, __file__, "--serve", url, str(port), str(static), "--write-every", str(write_every)]
    )
    deadline = time.monotonic() + 30
    while True:
        try:
            httpx.get(base + "/healthz", timeout=1).raise_for_status()
            return server, base
        except httpx.HTTPError:
            if time.monotonic() > deadline or server.poll() is not None:
                server.terminate()
                raise SystemExit("the server did not start") from None
            time.sleep(0.1)


def snapshot_cost(url: str) -> dict[str, float] | None:
    """What a change costs once (the snapshot's build, the JSON of /api/runs), in this process: the work
    every request did before the snapshot, done now once per poll cycle that wrote."""
    try:
        from monitor.web.conditional import json_bytes
        from monitor.web.snapshot import build
    except ImportError:  # a version before the snapshot
        return None
    from monitor.web.schemas import RunOut

    engine, ctx = context(url)
    builds, encodes = [], []
    for i in range(6):
        t = time.perf_counter()
        with ctx.sessions() as s:
            snap = build(ctx, s, i)
        builds.append(time.perf_counter() - t)
        t = time.perf_counter()
        json_bytes(RunOut, snap.runs)
        encodes.append(time.perf_counter() - t)
    cold = builds.pop(0)  # the first reads every run's stats; later ones only those of runs polled since
    engine.dispose()
    return {"cold": cold, "build": statistics.median(builds), "encode": statistics.median(encodes)}


def refresh_bytes(url: str, runs: int) -> list[tuple[str, int, int, int, int, int]]:
    """What the overview's 5-second refresh downloads after one run changed (its step moved on; it
    crashed), against the whole list it downloaded before row-level changes: in this process, on the
    real app. Each line: (what changed, rows sent, bytes, gzip bytes on the wire, whole list, its gzip)."""
    try:
        from monitor.web.dashboard.overview_changes import valid_version
    except ImportError:  # a version before the row-level refresh
        return []
    from fastapi.testclient import TestClient

    from monitor.storage.models import Run
    from monitor.web.app import create_app

    engine, ctx = context(url)
    api = TestClient(create_app(ctx), base_url="http://localhost", headers={"Accept-Encoding": "gzip"})
    out = []
    for what, change in (
        ("one run's step moved on", lambda r: setattr(r, "last_step", r.last_step + 12)),
        ("one run crashed", lambda r: setattr(r, "state", "crashed")),
    ):
        full = api.get("/fragments/overview")
        (version,) = re.findall(r'data-version="([0-9a-f]{24})"', full.text)
        assert valid_version(version)
        with ctx.sessions.begin() as s:  # a write of this process: the next refresh sees it at once
            change(s.get(Run, f"hero-{runs // 2:03d}"))
        got = api.get("/fragments/overview/changes", params={"since": version})
        whole = api.get("/fragments/overview")
        assert got.status_code == 200 and got.headers["content-type"] == "application/json", got.headers
        rows = len(got.json()["rows"])
        plain = len(whole.content)
        gz = gzip.compress(whole.content, compresslevel=5, mtime=0)
        out.append((what, rows, len(got.content), got.num_bytes_downloaded, plain, len(gz)))
    engine.dispose()
    return out


# What is loaded: (label, path, the static file's name, conditional: send the ETag back and expect 304)
TARGETS = [
    ("GET /api/runs", "/api/runs", "runs.json", False),
    ("GET /api/runs If-None-Match (304)", "/api/runs", "runs.json", True),
    ("GET / (overview)", "/", "overview.html", False),
    ("GET /fragments/overview (304)", "/fragments/overview", "fragment.html", True),
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--seconds", type=int, default=6, help="load per target")
    ap.add_argument("--connections", default="1,16", help="concurrent connections; a comma list runs each")
    ap.add_argument("--threads", type=int, default=2, help="wrk threads")
    ap.add_argument("--client", choices=["auto", "wrk", "httpx"], default="auto")
    ap.add_argument("--database-url", help="default: a fresh SQLite file in a temporary folder")
    ap.add_argument("--only", help="only the targets whose label holds this text (e.g. api/runs)")
    ap.add_argument(
        "--write-every",
        type=float,
        default=1.0,
        help="seconds between the engine's writes during the load (0: an idle database)",
    )
    ap.add_argument("--serve", nargs=3, metavar=("URL", "PORT", "FLOOR_DIR"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.serve:
        serve(args.serve[0], int(args.serve[1]), args.serve[2], args.write_every)
        return
    client = args.client if args.client != "auto" else ("wrk" if shutil.which("wrk") else "httpx")
    load = load_wrk if client == "wrk" else load_httpx
    targets = [t for t in TARGETS if not args.only or args.only in t[0]]
    rows, sizes = [], {}
    with tempfile.TemporaryDirectory(prefix="herowatch-bench-") as tmp:
        url = args.database_url or f"sqlite:///{tmp}/bench.db"
        fill(url, args.runs)
        rebuild = snapshot_cost(url)
        refreshes = refresh_bytes(url, args.runs)
        static = Path(tmp, "static")
        static.mkdir()
        server, base = start_server(url, static, args.write_every)
        try:
            for label, path, twin, conditional in targets:
                got = httpx.get(base + path, timeout=30)  # also warms the caches
                body = got.content
                assert path != "/api/runs" or len(got.json()) == args.runs
                if conditional and "etag" not in got.headers:
                    print(f"{label}: no ETag, no 304 path (a version before the snapshot)")
                    continue
                sizes[path] = len(body)
                Path(static, twin).write_bytes(body)  # the limit answers these very bytes
                pairs = [
                    (label, path, got.headers.get("etag")),
                    ("  limit: same bytes from memory", f"/bench-floor/{twin}", None),
                ]
                if conditional:
                    pairs[1] = (
                        "  limit: same bytes from memory (304)",
                        pairs[1][1],
                        httpx.get(base + pairs[1][1]).headers["etag"],
                    )
                for conns in (int(c) for c in args.connections.split(",")):
                    pair = []
                    for name, target, etag in pairs:
                        if conditional:  # the ETag current now; the engine's next write makes it stale,
                            # and the answers turn 200 until the client learns the new one (as a browser does)
                            etag = httpx.get(base + target, timeout=30).headers.get("etag")
                        headers = {"If-None-Match": etag} if conditional and etag else {}
                        status = httpx.get(base + target, headers=headers, timeout=30).status_code
                        assert status in ((200, 304) if conditional else (200,)), (name, status)
                        before = httpx.get(base + "/bench-stats", timeout=30).json()
                        r = load(base + target, args.seconds, conns, min(args.threads, conns), headers)
                        after = httpx.get(base + "/bench-stats", timeout=30).json()
                        r["rebuilds"] = after["rebuilds"] - before["rebuilds"]
                        pair.append((name, conns, 0 if conditional else len(body), r))
                    rows.append(pair)
        finally:
            server.terminate()
            server.wait(15)
    writes = (
        f"the engine writing every {args.write_every:g} s" if args.write_every > 0 else "an idle database"
    )
    print(
        f"\n{args.runs} runs, load by {client}, {args.seconds}s per line, uvicorn (1 worker) on 127.0.0.1, "
        f"database {url.split(':')[0]}, {writes}, {sys.platform}, {os.cpu_count()} CPUs"
    )
    print(
        f"limit: the same bytes from memory on the same server; target: req/s at least {TARGET_RPS:.2f}x "
        f"the limit's, p99 at most {TARGET_P99:.1f}x; 'rebuilds': snapshot rebuilds inside the window\n"
    )
    print(
        f"{'target':38} {'conns':>5} {'bytes':>9} {'req/s':>8} {'p50 ms':>8} {'p99 ms':>8} "
        f"{'requests':>8} {'errors':>6} {'rebuilds':>8} {'req/s ratio':>11} {'p99 ratio':>9}  verdict"
    )
    for (name, conns, size, r), (sname, _, ssize, s) in rows:
        rps, p99 = r["rps"] / s["rps"], r["p99"] / s["p99"]
        verdict = "meets" if rps >= TARGET_RPS and p99 <= TARGET_P99 else "MISSES"
        print(
            f"{name:38} {conns:>5} {size:>9,} {r['rps']:>8.1f} {r['p50'] * 1e3:>8.1f} {r['p99'] * 1e3:>8.1f} "
            f"{r['n']:>8,} {r['errors']:>6} {r['rebuilds']:>8} {rps:>10.2f}x {p99:>8.2f}x  {verdict}"
        )
        print(
            f"{sname:38} {conns:>5} {ssize:>9,} {s['rps']:>8.1f} {s['p50'] * 1e3:>8.1f} "
            f"{s['p99'] * 1e3:>8.1f} {s['n']:>8,} {s['errors']:>6} {s['rebuilds']:>8}"
        )
    if "/" in sizes:
        print(
            f"\nGET / (overview): {sizes['/']:,} bytes of HTML for {args.runs} runs = "
            f"{sizes['/'] / args.runs:,.0f} bytes a run (before the snapshot and compact sparklines: 2,532)"
        )
    for what, rows, size, wire, whole, whole_gz in refreshes:
        print(
            f"overview refresh after {what} of {args.runs}: {rows} row{'s' if rows != 1 else ''}, "
            f"{size:,} bytes ({wire:,} on the wire) vs the whole list {whole:,} ({whole_gz:,} gzipped): "
            f"{size / whole:.3f}x of it ({wire / whole_gz:.3f}x on the wire)"
        )
    if rebuild is None:
        return
    build_ms, cold_ms, encode_ms = (rebuild[k] * 1e3 for k in ("build", "cold", "encode"))
    print(
        f"a change (once per poll cycle that wrote, not per request): snapshot build {build_ms:.1f} ms "
        f"({cold_ms:.1f} ms with every run's stats read), /api/runs JSON {encode_ms:.1f} ms"
    )


if __name__ == "__main__":
    main()
