"""Three real replicas on one PostgreSQL, the W&B and Slack stand-ins, a stall: one replica is SIGKILLed
mid-run. Every run keeps being polled, the stall reaches Slack exactly once, nothing is polled twice
in the same cycle."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest
from sqlalchemy import select

from monitor.storage.db import make_engine, make_sessionmaker
from monitor.storage.models import Alert, Lease, Run
from tests.conftest import REPO
from tests.standins.slack import DEFAULT_TOKEN, SlackStandin
from tests.standins.wandb_server import WandbStandin
from tests.wandb_support import ENTITY, KEY, PROJECT, wid

pytestmark = pytest.mark.slow  # a minute or more: handed to a worker early (tests/conftest.py)

RUNS = ["hero-1", "hero-2", "hero-3"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(cond, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return
        time.sleep(0.25)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


class Trainer(threading.Thread):
    """Logs a step every 0.5 s for each run, with real timestamps; a run can be made to stall."""

    def __init__(self, wandb: WandbStandin) -> None:
        super().__init__(daemon=True)
        self.wandb, self.stalled, self.stop = wandb, set(), threading.Event()
        self.step = dict.fromkeys(RUNS, 0)

    def run(self) -> None:
        while not self.stop.wait(0.5):
            for r in RUNS:
                if r in self.stalled:
                    continue
                self.step[r] += 1
                s = self.step[r]
                self.wandb.log(
                    PROJECT,
                    r,
                    [{"_step": s, "_timestamp": time.time(), "train/loss": 3.0 - s * 1e-3, "global_step": s}],
                )


def test_three_replicas_survive_a_sigkill(pg_url, tmp_path):
    with WandbStandin(KEY, entity=ENTITY) as wandb, SlackStandin(channels=["C0ALERTS"]) as slack:
        for r in RUNS:
            wandb.add_run(PROJECT, r, tags=["hero"], state="running")
        trainer = Trainer(wandb)
        trainer.start()
        (tmp_path / "stall.yaml").write_text(
            "rules:\n  - {name: progress_stalled, kind: stall, floor: 6s, k: 10, startup: 60s,"
            " severity: critical, annotations: {summary: '{run}: {reason}'}}\n"
        )
        watches = "".join(
            f"  - name: {r}\n    poll_interval: 1s\n    wandb: {{entity: {ENTITY}, project: {PROJECT}, "
            f"run_ids: [{r}], base_url: '{wandb.url}', timeout: 3s, retries: 0}}\n"
            for r in RUNS
        )
        cfg = tmp_path / "hw.yaml"
        cfg.write_text(
            f"watch:\n{watches}rules: {{packs: [], files: [stall.yaml]}}\n"
            f"receivers:\n  - {{name: oncall, kind: slack, channel: C0ALERTS, base_url: '{slack.api_url}',"
            f" timeout: 5s, plots: false}}\nroute: {{receiver: oncall, group_wait: 0s, group_interval: 1s}}\n"
        )
        env = {
            **os.environ,
            "HEROWATCH_DATABASE_URL": pg_url,
            "WANDB_API_KEY": KEY,
            "SLACK_BOT_TOKEN": DEFAULT_TOKEN,
            "WANDB_DIR": str(tmp_path),
            "WANDB_CACHE_DIR": str(tmp_path),
            "WANDB_CONFIG_DIR": str(tmp_path),
        }
        replicas = [
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "monitor.cli",
                    "serve",
                    "--config",
                    str(cfg),
                    "--listen",
                    f"127.0.0.1:{free_port()}",
                    "--log-level",
                    "WARNING",
                ],
                cwd=REPO,
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
            )
            for _ in range(3)
        ]
        engine = make_engine(pg_url)
        sessions = make_sessionmaker(engine)

        def polled_since(t):
            with sessions() as s:
                return {r.name for r in s.scalars(select(Run)) if r.last_polled_at and r.last_polled_at > t}

        try:
            wait_for(lambda: polled_since(time.time() - 3) == set(RUNS), 60, "all runs polled")
            with sessions() as s:
                holder = s.get(Lease, "poll:hero-2").holder
            victim = next(p for p in replicas if holder.endswith(f":{p.pid}"))
            trainer.stalled.add("hero-2")  # the incident...
            victim.send_signal(signal.SIGKILL)  # ...and the replica polling it dies
            victim.wait(10)
            killed_at = time.time()
            wait_for(
                lambda: polled_since(killed_at + 1) == set(RUNS),
                60,
                "every run polled again after the kill (lease takeover)",
            )
            wait_for(lambda: len(slack.roots("C0ALERTS")) >= 1, 60, "the stall alert in Slack")
            time.sleep(3)  # no second message may follow (other replicas, retries)
            roots = slack.roots("C0ALERTS")
            assert len(roots) == 1 and "hero-2" in roots[0].text, [m.text for m in roots]
            with sessions() as s:
                alerts = s.scalars(select(Alert).where(Alert.rule == "progress_stalled")).all()
                assert [(a.run_id, a.state) for a in alerts] == [(wid("hero-2"), "firing")], "no false stall"
                holders = {
                    lease.holder for lease in s.scalars(select(Lease)) if lease.name.startswith("poll:")
                }
                assert all(not h.endswith(f":{victim.pid}") for h in holders)
            for r in RUNS:  # one poller per run: each history read starts where the previous one ended,
                ranges = [lo for _, lo, _ in wandb.history_ranges(r)]  # but for one re-read at the takeover
                assert len(ranges) - len(set(ranges)) <= 1, (r, ranges)
        finally:
            trainer.stop.set()
            for p in replicas:
                if p.poll() is None:
                    p.send_signal(signal.SIGTERM)
            for p in replicas:
                try:
                    p.wait(15)
                except subprocess.TimeoutExpired:
                    p.kill()
            engine.dispose()
        for p in replicas:
            if p is not victim:
                assert "Traceback" not in p.stderr.read().decode(), "a replica crashed"
