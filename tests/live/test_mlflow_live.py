"""MLflow runs, live: a real ``mlflow server`` (SQLite store), a trainer thread logging through the real
``mlflow`` client with the Hugging Face Trainer's MLflow keys (the profile is detected), ``herowatch
serve`` as a process, pages read from the Slack stand-in.

- a hang pages ``progress_stalled``; a NaN loss pages ``loss_nonfinite``;
- a crash (the run ends FAILED) pages ``run_crashed`` at once;
- the run restarted (resumed: RUNNING again, logging on) resolves it, with no stall page.
"""

from __future__ import annotations

import math
import threading
import time

from mlflow import MlflowClient
from mlflow.entities import Metric

from tests.live.sources_support import source_stack
from tests.live.support import alerts_of, real_losses, wait_for
from tests.mlflow_server import MlflowServer

RULES = "        progress_stalled: {floor: 6s, startup: 30s}\n"
STEP = 0.5


class Trainer(threading.Thread):
    def __init__(self, client: MlflowClient, runs: dict[str, str]) -> None:
        super().__init__(daemon=True)
        self.client, self.runs, self.stop = client, runs, threading.Event()
        self.step = dict.fromkeys(runs, 0)
        self.hung: set[str] = set()
        self.nan: set[str] = set()
        self.values = real_losses()

    def run(self) -> None:
        while not self.stop.wait(STEP):
            for name, run_id in self.runs.items():
                if name in self.hung:
                    continue
                self.step[name] += 1
                s = self.step[name]
                loss, gnorm = self.values[s % len(self.values)]
                if name in self.nan:
                    loss = math.nan
                now = int(time.time() * 1000)
                metrics = {"loss": loss, "grad_norm": gnorm, "learning_rate": 3e-4, "epoch": s / 1000}
                self.client.log_batch(run_id, metrics=[Metric(k, v, now, s) for k, v in metrics.items()])


def test_mlflow_runs_page_live(tmp_path):
    server = MlflowServer(tmp_path / "mlflow").start()
    trainer = None
    try:
        client = MlflowClient(server.url)
        exp = client.create_experiment("pretrain")
        runs = {
            name: client.create_run(exp, run_name=name, tags={"hero": "true"}).info.run_id
            for name in ("hero-a", "hero-b")
        }
        client.create_run(exp, run_name="notebook", tags={"hero": "false"})  # not selected
        trainer = Trainer(client, runs)
        trainer.start()
        with source_stack(tmp_path) as stack:
            source = (
                f"    mlflow: {{tracking_uri: '{server.url}', experiment: pretrain, "
                "filter: \"tags.hero = 'true'\", timeout: 3s, retries: 0}"
            )
            hw = stack.serve(stack.write_config(source, RULES))
            ids = {name: f"mlflow:pretrain/{rid}" for name, rid in runs.items()}

            def step_of(name: str) -> int:
                return next((r.get("step") or 0 for r in hw.api("/api/runs") if r["id"] == ids[name]), -1)

            wait_for(lambda: step_of("hero-a") > 20 and step_of("hero-b") > 20, 60, "both runs to be read")
            assert len(hw.api("/api/runs")) == 2, "the filter selects the hero runs only"
            assert "huggingface" in str(hw.api(f"/api/runs/{ids['hero-a']}")), "the HF profile is detected"

            # ---- a hang pages ---
            trainer.hung.add("hero-a")
            t0 = time.monotonic()
            wait_for(lambda: stack.pages("progress_stalled", "hero-a"), 60, "the stall page")
            print(f"hang -> page: {time.monotonic() - t0:.1f}s")
            trainer.hung.discard("hero-a")
            wait_for(lambda: alerts_of(hw, "progress_stalled", "resolved"), 20, "the stall to resolve")

            # ---- a NaN loss pages ---
            trainer.nan.add("hero-b")
            t0 = time.monotonic()
            wait_for(lambda: stack.pages("loss_nonfinite", "hero-b"), 30, "the NaN page")
            print(f"NaN -> page: {time.monotonic() - t0:.1f}s")
            trainer.nan.discard("hero-b")

            # ---- a crash: the run ends FAILED and pages at once ---
            trainer.hung.add("hero-a")
            client.set_terminated(runs["hero-a"], "FAILED")
            t0 = time.monotonic()
            wait_for(lambda: stack.pages("run_crashed", "hero-a"), 20, "the crash page")
            print(f"FAILED -> page: {time.monotonic() - t0:.1f}s")

            # ---- the restart: resumed, RUNNING again and logging: the crash resolves, no stall page ---
            stalls = len(stack.pages("progress_stalled", "hero-a"))
            client.update_run(runs["hero-a"], status="RUNNING")
            trainer.hung.discard("hero-a")
            wait_for(lambda: alerts_of(hw, "run_crashed", "resolved"), 30, "the crash to resolve")
            time.sleep(4)
            assert len(stack.pages("progress_stalled", "hero-a")) == stalls
            assert hw.errors() == "", hw.errors()
    finally:
        if trainer is not None:
            trainer.stop.set()
        server.stop()
