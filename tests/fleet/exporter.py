"""A simulated GPU fleet behind a real ``prometheus_client`` exporter, as dcgm-exporter and node-exporter
would expose it: per run 88 hosts x 8 GPUs (SM activity, temperature, clock throttle reasons) and per
host network and disk byte counters (an ``eth0`` and a busy ``lo`` that the queries must leave out).

Time is simulated: the exporter serves one tick of the fleet at a time with explicit timestamps
(``t0 + k x step``) and moves to the next once ``confirm(k)`` says Prometheus has it, so the real
Prometheus server ingests ten minutes of fleet in seconds, without holes (a scrape that timed out on a
loaded machine just gets the same tick again; Prometheus drops the duplicates). The exposition of a
tick is rendered once by prometheus_client (``generate_latest``) and served as is to every scrape.
Values are deterministic per seed.

Scenarios (``Scenario``), from ``onset`` on:
- ``stuck_restore``: every GPU idles at a barrier (SM ~0.01, cooling), every host's network goes quiet,
  except ``odd_host``, still reading a checkpoint from the network at ~1.5 GB/s;
- ``throttled_gpu``: GPU ``odd_gpu`` on ``odd_host`` throttles (HW thermal slowdown, 87 °C, SM 0.86
  while the fleet holds 0.97);
- ``all_stall``: every rank stalls alike (a collective hang with no odd one: nothing stands out).
Before ``onset`` the fleet trains normally: SM 0.97 (rank 0's GPU a little lower), temperatures
by slot, ~1.9 GB/s each way on the network, data loading from disk.
"""

from __future__ import annotations

import math
import random
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import prometheus_client
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

HOSTS, GPUS = 88, 8
GB = 1e9


@dataclass(frozen=True)
class Scenario:
    run: str
    prefix: str  # host names: f"{prefix}-node-07"
    kind: str  # stuck_restore | throttled_gpu | all_stall
    onset: int  # tick
    odd_host: int = 17
    odd_gpu: int = 3
    seed: int = 1

    def host(self, h: int) -> str:
        return f"{self.prefix}-node-{h:02d}"


@dataclass
class _Counters:
    values: dict[tuple[str, int, str], float] = field(default_factory=dict)

    def add(self, key: tuple[str, int, str], rate: float, seconds: float) -> float:
        self.values[key] = self.values.get(key, 0.0) + max(0.0, rate) * seconds
        return self.values[key]


class FleetCollector(Collector):
    def __init__(self, scenarios: list[Scenario], t0: float, ticks: int, step: float = 15.0) -> None:
        self.scenarios, self.t0, self.ticks, self.step = scenarios, t0, ticks, step
        self.k = 0  # the tick served now
        self.counters = _Counters()

    def collect(self) -> Iterator:
        return iter(self._families(self.k))

    def tick_time(self, k: int) -> float:
        return self.t0 + k * self.step

    # ---- the fleet at tick k ---------------------------------------------------------------------
    def _families(self, k: int) -> list:
        t = self.tick_time(k)
        gpu_labels = ["Hostname", "gpu", "UUID", "modelName", "pod", "namespace"]
        sm = GaugeMetricFamily("DCGM_FI_PROF_SM_ACTIVE", "SM active ratio", labels=gpu_labels)
        temp = GaugeMetricFamily("DCGM_FI_DEV_GPU_TEMP", "GPU temperature (C)", labels=gpu_labels)
        thr = GaugeMetricFamily(
            "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", "clock throttle reasons", labels=gpu_labels
        )
        node = ["job", "instance", "device"]
        rx = CounterMetricFamily("node_network_receive_bytes", "received bytes", labels=node)
        tx = CounterMetricFamily("node_network_transmit_bytes", "sent bytes", labels=node)
        rd = CounterMetricFamily("node_disk_read_bytes", "bytes read", labels=node)
        wr = CounterMetricFamily("node_disk_written_bytes", "bytes written", labels=node)
        for sc in self.scenarios:
            rng = random.Random(hash((sc.seed, k)) & 0xFFFFFFFF)
            late = k >= sc.onset
            for h in range(HOSTS):
                host = sc.host(h)
                for g in range(GPUS):
                    s, c, reasons = self._gpu(sc, h, g, k, late, rng)
                    labels = [host, str(g), f"GPU-{sc.prefix}-{h:02d}-{g}", "NVIDIA H100 80GB HBM3",
                              f"{sc.run}-worker-{h}", "train"]  # fmt: skip
                    sm.add_metric(labels, s, timestamp=t)
                    temp.add_metric(labels, c, timestamp=t)
                    thr.add_metric(labels, reasons, timestamp=t)
                r_rate, t_rate, d_read, d_write = self._host(sc, h, late, rng)
                inst = f"{host}:9100"
                lo = 5 * GB  # loopback traffic: the queries leave the lo device out
                counters = ((rx, r_rate, "eth0"), (tx, t_rate, "eth0"), (rd, d_read, "nvme0n1"),
                            (wr, d_write, "nvme0n1"), (rx, lo, "lo"), (tx, lo, "lo"))  # fmt: skip
                for fam, rate, dev in counters:
                    total = self.counters.add((fam.name + sc.run + dev, h, host), rate, self.step)
                    fam.add_metric([sc.run, inst, dev], total, timestamp=t)
        return [sm, temp, thr, rx, tx, rd, wr]

    @staticmethod
    def _gpu(
        sc: Scenario, h: int, g: int, k: int, late: bool, rng: random.Random
    ) -> tuple[float, float, int]:
        slot = (g % 4) * 2.5 - 3.0  # GPUs further from the fans run warmer
        sm = 0.97 - (0.03 if h == 0 and g == 0 else 0.0) + rng.gauss(0, 0.004)
        temp = 68.0 + slot + rng.gauss(0, 1.0)
        reasons = 4 if rng.random() < 0.1 else 0  # SW power cap now and then: not a slowdown
        if late and sc.kind in ("stuck_restore", "all_stall"):
            cool = math.exp(-(k - sc.onset) / 6.0)
            sm = abs(0.01 + rng.gauss(0, 0.004))
            temp = 42.0 + slot + (temp - 42.0 - slot) * cool + rng.gauss(0, 0.5)
            reasons = 1  # idle
        if late and sc.kind == "throttled_gpu" and h == sc.odd_host and g == sc.odd_gpu:
            sm, temp, reasons = 0.86 + rng.gauss(0, 0.004), 87.0 + rng.gauss(0, 0.5), 0x40 | 0x4
        return min(1.0, max(0.0, sm)), temp, reasons

    @staticmethod
    def _host(sc: Scenario, h: int, late: bool, rng: random.Random) -> tuple[float, float, float, float]:
        rx = 1.9 * GB * (1 + rng.gauss(0, 0.03))
        tx = 1.9 * GB * (1 + rng.gauss(0, 0.03))
        read = 50e6 * (1 + rng.gauss(0, 0.2))
        write = 2e6 * (1 + rng.gauss(0, 0.2))
        if late and sc.kind in ("stuck_restore", "all_stall"):
            rx, tx = 5e3 * (1 + rng.random()), 5e3 * (1 + rng.random())
            read = 1e5 * rng.random()
            if sc.kind == "stuck_restore" and h == sc.odd_host:
                rx = 1.5 * GB * (1 + rng.gauss(0, 0.05))  # the rank still restoring its checkpoint
        return rx, tx, read, write


class FleetExporter:
    """The collector's exposition served over HTTP on 127.0.0.1, one tick at a time (see the module)."""

    def __init__(self, collector: FleetCollector) -> None:
        self.collector = collector
        self.registry = prometheus_client.CollectorRegistry(auto_describe=False)
        self.registry.register(collector)
        self.body = b""
        self.served = threading.Event()  # set once Prometheus has the last tick
        self.failed: str | None = None
        self._stop = threading.Event()
        exporter = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - the http.server API
                body = exporter.body
                self.send_response(200)
                self.send_header("Content-Type", prometheus_client.CONTENT_TYPE_LATEST)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                try:
                    self.wfile.write(body)
                except OSError:
                    pass  # Prometheus gave up on this scrape (timeout): it gets the tick again

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self._render(0)
        self._threads = [threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)]

    def _render(self, k: int) -> None:
        self.collector.k = k
        self.body = prometheus_client.generate_latest(self.registry)

    def drive(self, confirm: Callable[[int], bool], timeout: float = 60.0) -> None:
        """Serve the ticks one after the other, each until Prometheus has it."""

        def run() -> None:
            for k in range(self.collector.ticks):
                if k:
                    self._render(k)
                deadline = threading.Event()
                timer = threading.Timer(timeout, deadline.set)
                timer.start()
                while not confirm(k):
                    if self._stop.wait(0.03) or deadline.is_set():
                        timer.cancel()
                        self.failed = f"tick {k} never reached Prometheus in {timeout:g}s"
                        return
                timer.cancel()
            self.served.set()

        thread = threading.Thread(target=run, name=f"fleet-ticks-{self.port}", daemon=True)
        self._threads.append(thread)
        thread.start()

    def __enter__(self) -> FleetExporter:
        self._threads[0].start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self.server.shutdown()
        self.server.server_close()
        for t in self._threads:
            t.join(timeout=10)

    @property
    def target(self) -> str:
        return f"127.0.0.1:{self.port}"
