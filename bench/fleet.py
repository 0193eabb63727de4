"""What the fleet views cost: polling a run of 704 GPUs on 88 hosts every 15 s, and the raster a week of it
leaves behind.

    .venv/bin/python bench/fleet.py [--cycles 12] [--days 7] [--database-url postgresql://...]

Part 1, a poll cycle, against the real Prometheus fed by a real prometheus_client exporter (the one of
tests/fleet/exporter.py: 88 hosts x 8 GPUs, a healthy fleet): the Prometheus source reads one run's 5
default queries and its 7 fleet metrics (3 per GPU, 4 per host: 2,464 series) for the 15 s since the last
poll, and the new columns are folded into the raster. Per cycle: the source's poll time and the store's
time (against the 15 s poll interval), the bytes read (on the wire, gzip, and as JSON), the rows written
(against one row per series and timestamp, what a store without columns would write).

Part 2, a simulated week of the same fleet folded into the raster (an hour of columns at a time): its
stored size, against the same week as raw float32 samples and as Prometheus' JSON answers.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

import numpy as np
from sqlalchemy import delete

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from monitor.fleet.frame import FleetFrame  # noqa: E402
from monitor.settings import Settings  # noqa: E402
from monitor.sources.base import Target  # noqa: E402
from monitor.sources.prometheus_config import PrometheusTarget  # noqa: E402
from monitor.sources.prometheus_source import PrometheusSource  # noqa: E402
from monitor.storage import migrate, raster, raster_read  # noqa: E402
from monitor.storage.db import make_engine, make_sessionmaker  # noqa: E402
from monitor.storage.models import FleetColumn, FleetRaster, Run  # noqa: E402
from tests.fleet.exporter import GPUS, HOSTS, FleetCollector, FleetExporter, Scenario  # noqa: E402
from tests.prometheus_server import PrometheusServer, wait_for  # noqa: E402

STEP = 15.0
RUN = "hero-704"
GPU_METRICS, HOST_METRICS = 3, 4
SERIES = HOSTS * GPUS * GPU_METRICS + HOSTS * HOST_METRICS


def mib(n: float) -> str:
    return f"{n / 2**20:,.2f} MiB"


def fresh_db(url: str | None, tmp: Path):  # noqa: ANN201
    url = url or f"sqlite:///{tmp / 'fleet.db'}"
    migrate.upgrade(url)
    sessions = make_sessionmaker(make_engine(url))
    with sessions.begin() as s:
        if s.get(Run, RUN) is None:
            s.add(Run(id=RUN, watch="bench", source="prometheus", first_seen_at=0.0, labels={}, restarts=0))
    return url, sessions


# ---- part 1: one poll cycle ---------------------------------------------------------------------------
def poll_cycles(cycles: int, db_url: str | None, tmp: Path) -> None:
    warm = 12  # ticks before the first measured poll: the rates' 2-minute windows fill
    t0 = (int(time.time()) - 1800) // int(STEP) * STEP
    collector = FleetCollector([Scenario(RUN, "n", "throttled_gpu", onset=10**9)], t0, warm + cycles, STEP)
    _, sessions = fresh_db(db_url, tmp)
    with ExitStack() as stack:
        exporter = stack.enter_context(FleetExporter(collector))
        scrape = {
            "job_name": "fleet",
            "scrape_interval": "250ms",
            "scrape_timeout": "240ms",
            "honor_labels": True,
            "static_configs": [{"targets": [exporter.target]}],
        }
        prom = stack.enter_context(PrometheusServer(tmp / "prometheus", [scrape]))
        probe = f'timestamp(DCGM_FI_PROF_SM_ACTIVE{{pod="{RUN}-worker-0", gpu="0"}})'

        def has(k: int) -> bool:
            try:
                got = prom.query(probe, at=collector.tick_time(k))
            except Exception:  # noqa: BLE001 - not up yet
                return False
            return bool(got) and float(got[0]["value"][1]) == collector.tick_time(k)

        print(f"feeding {warm + cycles} ticks of {SERIES:,} series to Prometheus ...", flush=True)
        exporter.drive(has)
        wait_for(lambda: exporter.served.is_set() or None, 300, "the exporter's last tick")
        source = PrometheusSource(Settings())
        stack.callback(source.close)
        wire, body = [0], [0]

        def count(response) -> None:  # noqa: ANN001
            response.read()
            wire[0] += response.num_bytes_downloaded
            body[0] += len(response.content)

        source._http._client.event_hooks["response"] = [count]  # noqa: SLF001 - measuring the client
        cfg = PrometheusTarget(url=prom.url, runs=[RUN], step="15s", lookback="3m", fleet={})
        target = Target("bench", cfg, {}, {RUN: {}})
        now = collector.tick_time(warm - 1)
        cursors = source.poll(target, {}, now).cursors  # the first read: the warm-up ticks
        rows = []
        for _ in range(cycles):
            now += STEP
            wire[0] = body[0] = 0
            started = time.perf_counter()
            result = source.poll(target, cursors, now).validated()
            polled = time.perf_counter() - started
            assert result.error is None, result.error
            cursors = result.cursors
            started = time.perf_counter()
            with sessions.begin() as s:
                written = raster.ingest(s, RUN, result.fleet, raster.RasterLimits())
            stored = time.perf_counter() - started
            cells = sum(len(f.members) * len(f.times) for f in result.fleet)
            rows.append((polled, stored, wire[0], body[0], written, cells, result.requests))
    p, st, w, b, n, c, r = (statistics.median(col) for col in zip(*rows, strict=True))
    print(f"\nPart 1: one poll cycle of a {HOSTS} x {GPUS} GPU run ({SERIES:,} fleet series, 7 fleet "
          f"metrics), median of {cycles} cycles, each reading the 15 s since the last")  # fmt: skip
    head()
    line("source poll time (12 queries, HTTP + JSON)", f"{p * 1000:.0f} ms", "15 s interval", p / STEP)
    line("raster store time (one transaction)", f"{st * 1000:.0f} ms", "15 s interval", st / STEP)
    line("requests", f"{r:.0f}", f"series: {SERIES:,}", r / SERIES)
    line("bytes read on the wire (gzip)", f"{w / 1024:,.1f} kB", f"JSON: {b / 1024:,.1f} kB", w / b)
    line("raster rows written", f"{n:.0f}", f"a row a sample: {int(c):,}", n / c)


def head() -> None:
    print(f"{'figure':<44}{'measured':>16}{'reference':>26}{'ratio':>10}")


def line(figure: str, measured: str, reference: str, share: float | None) -> None:
    print(f"{figure:<44}{measured:>16}{reference:>26}{'' if share is None else f'{share:.3g}x':>10}")


# ---- part 2: a week --------------------------------------------------------------------------------------
def frames_for(hour: int, t0: float, rng: np.random.Generator) -> list[FleetFrame]:
    n = int(3600 / STEP)
    times = tuple(t0 + (hour * n + k) * STEP for k in range(n))
    gpus = tuple((f"n-node-{h:02d}", str(g)) for h in range(HOSTS) for g in range(GPUS))
    hosts = tuple((f"n-node-{h:02d}", None) for h in range(HOSTS))
    specs = [
        ("sm_active", "SM active", "ratio", 0.97, 0.004, gpus),
        ("gpu_temp", "GPU temperature", "celsius", 68.0, 2.0, gpus),
        ("gpu_slowdown", "clock slowdown", "fraction", 0.0, 0.0, gpus),
    ]
    specs += [(m, m, "bytes_per_second", mean, mean * 0.05, hosts) for m, mean in
              (("net_rx", 1.9e9), ("net_tx", 1.9e9), ("disk_read", 5e7), ("disk_write", 2e6))]  # fmt: skip
    out = []
    for name, label, unit, mean, sd, members in specs:
        values = rng.normal(mean, sd, (len(members), n)) if sd else np.full((len(members), n), mean)
        word = "GPU" if members is gpus else None
        rows = tuple(map(tuple, values.tolist()))
        out.append(FleetFrame(RUN, name, label, unit, word, STEP, members, times, rows))
    return out


def week(days: float, db_url: str | None, tmp: Path) -> None:
    url, sessions = fresh_db(db_url, tmp)
    with sessions.begin() as s:  # a fresh raster, even in a database given with --database-url
        s.execute(delete(FleetColumn).where(FleetColumn.run_id == RUN))
        s.execute(delete(FleetRaster).where(FleetRaster.run_id == RUN))
    rng = np.random.default_rng(7)
    t0 = 1_780_000_000 // int(STEP) * STEP
    hours = int(days * 24)
    started = time.perf_counter()
    sizes = []
    for hour in range(hours):
        with sessions.begin() as s:
            raster.ingest(s, RUN, frames_for(hour, t0, rng), raster.RasterLimits())
        if (hour + 1) % 24 == 0:
            with sessions() as s:
                sizes.append(raster_read.stored_bytes(s, RUN))
            print(f"  day {len(sizes)}: raster {mib(sizes[-1])}", flush=True)
    took = time.perf_counter() - started
    with sessions() as s:
        metas = raster_read.rasters_of(s, RUN)
        size = raster_read.stored_bytes(s, RUN)
        columns = sum(m.fine + m.coarse for m in metas)
    samples = SERIES * hours * 3600 / STEP
    raw = samples * 4  # float32 per sample, no timestamps, no labels: the least an unbounded store keeps
    json_bytes = samples * 25  # Prometheus' JSON: [1780000000,"0.9712345"], ~25 bytes a point
    print(f"\nPart 2: {days:g} simulated days of the same fleet ({samples:,.0f} samples) folded in "
          f"{took:.0f}s ({url.split(':')[0]})")  # fmt: skip
    head()
    line(f"raster size after {days:g} days", mib(size), f"raw float32: {mib(raw)}", size / raw)
    line("", "", f"JSON: {mib(json_bytes)}", size / json_bytes)
    line("raster columns per metric", f"{columns / 7:,.0f}", f"samples a series: {hours * 240:,}",
         columns / 7 / (hours * 240))  # fmt: skip
    if len(sizes) >= 3:
        grew = sizes[-1] - sizes[-2]
        line("growth over the last day", mib(grew), f"first day: {mib(sizes[0])}", grew / sizes[0])
    line("bound (7 metrics, 704 GPUs, 88 hosts)", mib(bound()), "", size / bound())


def bound() -> float:
    """The most the raster holds: fine columns of the last hour (+10%), 256 coarse ones; 16 bytes a cell."""
    columns = math.ceil(3600 / STEP) * 1.1 + 1 + 256
    return columns * 16 * (HOSTS * GPUS * GPU_METRICS + HOSTS * HOST_METRICS)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cycles", type=int, default=12, help="measured poll cycles (part 1)")
    ap.add_argument("--days", type=float, default=7.0, help="simulated days folded into the raster (part 2)")
    ap.add_argument("--database-url", default=None, help="default: a temporary SQLite file")
    ap.add_argument("--skip-poll", action="store_true", help="part 2 only (no Prometheus needed)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        if not args.skip_poll:
            poll_cycles(args.cycles, args.database_url, Path(tmp))
        week(args.days, args.database_url, Path(tmp))


if __name__ == "__main__":
    main()
