"""A live set-up for tests that run ``herowatch serve`` as a real process, as on-call would meet it:

- a W&B-compatible server (``tests/standins/wandb_server.py``) fed by a trainer thread that logs a
  step every ``STEP`` seconds with real timestamps and real values (the llm.c GPT-2 log in
  ``../shared/data/real/``);
- a Slack Web API server that records every call (``tests/standins/slack/``);
- a real Prometheus (Debian's) scraping a Kubernetes/DCGM-style exporter (``prometheus_client``) with
  one pod per run: OOM events, container restarts, SM activity.

Rules run with short limits (seconds instead of minutes) so that a hang, an outage and a restart fit
in a test: the mechanisms are the same. Nothing waits a fixed time where a condition can be awaited.
"""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
from prometheus_client import CollectorRegistry, Counter, Gauge, start_http_server

from tests.conftest import REAL_DATA, REPO
from tests.prometheus_server import PrometheusServer, free_port
from tests.standins.slack import DEFAULT_TOKEN, SlackStandin
from tests.standins.wandb_server import WandbStandin
from tests.wandb_support import ENTITY, KEY, PROJECT

STEP = 0.5  # seconds per training step
CHANNEL = "C0ONCALL"
API_TOKEN = "live-test-token-" + "0123456789abcdef" * 2  # fake, 48 characters


def real_losses() -> list[tuple[float, float]]:
    """(loss, grad norm) of every train step of the llm.c GPT-2 124M run, from step 1000 on."""
    rows = []
    with (REAL_DATA / "llmc_gpt2_124m_steps.csv").open() as f:
        for row in csv.DictReader(f):
            if row["kind"] == "train" and int(row["step"]) >= 1000 and row["grad_norm"]:
                rows.append((float(row["loss"]), float(row["grad_norm"])))
    return rows


class Trainer(threading.Thread):
    """Logs a step every ``STEP`` seconds for each run; a run can be hung (no more steps) and resumed, or
    log one step's loss ``blip[run]`` times as high (a one-step blip, as a bad batch makes)."""

    def __init__(
        self,
        wandb: WandbStandin,
        runs: list[str],
        names: dict[str, tuple[str, str | None]] | None = None,
        every: float = STEP,
    ) -> None:
        super().__init__(daemon=True)
        self.wandb, self.runs, self.hung, self.stop = wandb, runs, set(), threading.Event()
        self.every = every
        self.blip: dict[str, float] = {}
        self.held: dict[str, list[dict]] = {}  # run -> rows logged but not delivered yet (hold/release)
        self.step = dict.fromkeys(runs, 0)
        self.values = real_losses()
        self.names = names or {}  # run -> the keys it logs its loss and grad norm (or None) under

    def run(self) -> None:
        while not self.stop.wait(self.every):
            self.wandb.clock = time.time()
            for r in self.runs:
                if r in self.hung:
                    continue
                self.step[r] += 1
                s = self.step[r]
                loss, gnorm = self.values[s % len(self.values)]
                loss *= self.blip.pop(r, 1.0)
                lk, gk = self.names.get(r, ("train/loss", "grad/norm/total"))
                row = {"_step": s, "_timestamp": time.time(), lk: loss}
                if gk is not None:  # None: the run logs no grad norm (many trainers do not by default)
                    row[gk] = gnorm
                if r in self.held:
                    self.held[r].append(row)
                else:
                    self.wandb.log(PROJECT, r, [row])

    def hold(self, runs: list[str]) -> None:
        """Keep the runs' rows from W&B, as its client does while the API fails (it retries later)."""
        for r in runs:
            self.held.setdefault(r, [])

    def release(self) -> int:
        """Deliver the held rows at once, with their own timestamps (the backlog); returns how many."""
        n = 0
        for r in list(self.held):
            rows = self.held.pop(r)
            self.wandb.log(PROJECT, r, rows)
            n += len(rows)
        return n


class Exporter:
    """A Kubernetes/DCGM-style exporter: one pod per run, scraped by the real Prometheus."""

    def __init__(self, runs: list[str]) -> None:
        self.registry = CollectorRegistry()
        self.ooms = Counter("container_oom_events", "OOM kills", ["pod", "container"], registry=self.registry)
        self.restarts = Gauge(
            "kube_pod_container_status_restarts_total",
            "restarts",
            ["pod", "container"],
            registry=self.registry,
        )
        self.sm = Gauge("DCGM_FI_PROF_SM_ACTIVE", "SM activity", ["pod", "gpu"], registry=self.registry)
        for r in runs:
            self.add_pod(r)
        self.port = free_port()
        self.server, self.thread = start_http_server(self.port, addr="127.0.0.1", registry=self.registry)

    def add_pod(self, run: str) -> None:
        """The run's pod appears in the metrics (a new run, or an exporter fixed)."""
        self.ooms.labels(f"{run}-0", "trainer").inc(0)
        self.restarts.labels(f"{run}-0", "trainer").set(0)
        for gpu in range(2):
            self.sm.labels(f"{run}-0", str(gpu)).set(0.95)

    def oom(self, run: str) -> None:
        self.ooms.labels(f"{run}-0", "trainer").inc()

    def close(self) -> None:
        self.server.shutdown()


class Herowatch:
    """One ``herowatch serve`` process."""

    def __init__(self, config: Path, env: dict[str, str], log: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = log
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "monitor.cli",
                "serve",
                "--config",
                str(config),
                "--listen",
                f"127.0.0.1:{self.port}",
                "--log-level",
                "INFO",
            ],
            cwd=REPO,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=log.open("ab"),
        )

    @property
    def pid(self) -> int:
        return self.proc.pid

    def get(self, path: str) -> httpx.Response:
        r = httpx.get(self.url + path, headers={"Authorization": f"Bearer {API_TOKEN}"}, timeout=5)
        r.raise_for_status()
        return r

    def api(self, path: str) -> Any:
        return self.get(path).json()

    def text(self, path: str) -> str:
        return self.get(path).text

    def ready(self) -> bool:
        try:
            return httpx.get(self.url + "/healthz", timeout=1).status_code == 200
        except httpx.HTTPError:
            return False

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        return self.proc.wait(timeout)

    def errors(self) -> str:
        text = self.log.read_text(errors="replace")
        return "\n".join(line for line in text.splitlines() if "Traceback" in line or " ERROR " in line)


def wait_for(
    cond: Callable[[], Any],
    timeout: float,
    what: str,
    every: float = 0.25,
    seen: Callable[[], Any] | None = None,
) -> Any:
    """Wait for ``cond`` to be true, at most ``timeout`` seconds; on a time-out say what ``seen`` shows
    (what the test saw instead: the alerts, the channel)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = cond()
        if got:
            return got
        time.sleep(every)
    saw = ""
    if seen is not None:
        try:
            saw = f"; saw instead: {seen()}"
        except Exception as exc:  # noqa: BLE001 - the report must not hide the time-out
            saw = f"; could not tell what was seen: {exc!r}"
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}{saw}")


class Stack:
    def __init__(self, tmp: Path, runs: list[str], db_url: str) -> None:
        self.tmp, self.runs, self.db_url = tmp, runs, db_url
        self.procs: list[Herowatch] = []

    def write_config(self, rules: str, unavailable_after: str = "8s", extra: str = "") -> Path:
        cfg = self.tmp / "herowatch.yaml"
        cfg.write_text(
            f"""
watch:
  - name: hero
    poll_interval: 1s
    unavailable_after: {unavailable_after}
    # polled every second against a stand-in with no quota: herowatch's own W&B quota (200 a minute
    # by default, for a real server) is lifted here
    wandb: {{entity: {ENTITY}, project: {PROJECT}, tags: [hero], timeout: 2s, retries: 0, rate_limit: 100000}}
    prometheus:
      url: {self.prometheus.url}
      step: 1s
      lookback: 2m
      timeout: 2s
      retries: 0
      queries: {{xid_errors_total: null, host_memory_available_bytes: null}}  # not exported here
{extra}    rules:
      overrides:
{rules}
receivers:
  - {{name: oncall, kind: slack, channel: {CHANNEL}, base_url: '{self.slack.api_url}', timeout: 5s}}
route: {{receiver: oncall, group_by: [run], group_wait: 0s, group_interval: 1s, repeat_interval: 4h}}
"""
        )
        return cfg

    def env(self) -> dict[str, str]:
        return {
            **os.environ,
            "HEROWATCH_DATABASE_URL": self.db_url,
            "HEROWATCH_API_TOKEN": API_TOKEN,
            "WANDB_API_KEY": KEY,
            "WANDB_BASE_URL": self.wandb.url,  # the W&B client's own variable: no base_url in the config
            "SLACK_BOT_TOKEN": DEFAULT_TOKEN,
            "WANDB_DIR": str(self.tmp),
            "WANDB_CACHE_DIR": str(self.tmp),
            "WANDB_CONFIG_DIR": str(self.tmp),
        }

    def serve(self, config: Path) -> Herowatch:
        hw = Herowatch(config, self.env(), self.tmp / f"herowatch-{len(self.procs)}.log")
        self.procs.append(hw)
        wait_for(hw.ready, 60, "herowatch serve to answer")
        return hw

    def pages(self) -> list[str]:
        return self.slack.pages(CHANNEL)

    def scrape_configs(self) -> list[dict[str, Any]]:
        target = f"127.0.0.1:{self.exporter.port}"
        return [{"job_name": "k8s", "scrape_interval": "1s", "static_configs": [{"targets": [target]}]}]

    def scrape(self) -> None:
        """The Prometheus starts scraping the exporter (its first scrape within a second)."""
        self.prometheus.reload(self.scrape_configs())


@contextmanager
def live_stack(
    tmp: Path,
    runs: list[str],
    db_url: str,
    names: dict[str, tuple[str, str | None]] | None = None,
    pods: list[str] | None = None,
    every: float = STEP,
    scrape: bool = True,
) -> Iterator[Stack]:
    """The stand-ins, a real Prometheus and the trainer. ``scrape=False``: the Prometheus starts with no
    scrape target yet (a fresh one, its first scrape to come: ``stack.scrape()`` adds the target)."""
    stack = Stack(tmp, runs, db_url)
    with (
        WandbStandin(KEY, entity=ENTITY, clock=time.time()) as wandb,
        SlackStandin(channels=[CHANNEL]) as slack,
    ):
        stack.wandb, stack.slack = wandb, slack
        for r in runs:
            wandb.add_run(PROJECT, r, tags=["hero"], state="running")
        stack.exporter = Exporter(runs if pods is None else pods)
        prom = PrometheusServer(tmp / "prometheus", stack.scrape_configs() if scrape else [])
        stack.prometheus = prom
        prom.start()
        stack.trainer = Trainer(wandb, runs, names, every)
        stack.trainer.start()
        try:
            yield stack
        finally:
            stack.trainer.stop.set()
            for hw in stack.procs:
                if hw.proc.poll() is None:
                    hw.proc.kill()
                    hw.proc.wait(10)
            prom.kill()
            stack.exporter.close()


def alerts_of(hw: Herowatch, rule: str, state: str | None = None) -> list[dict[str, Any]]:
    got = hw.api("/api/alerts?limit=500")
    return [a for a in got if a["rule"] == rule and (state is None or a["state"] == state)]


def dump(stack: Stack) -> str:
    return json.dumps(stack.pages(), indent=1)
