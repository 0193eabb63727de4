"""An MLflow run resumed from a checkpoint into the same run, live: a real ``mlflow server`` (SQLite
store), a trainer thread logging through the real ``mlflow`` client, ``herowatch serve`` as a process,
pages read from the Slack stand-in.

The trainer restarts from a checkpoint 30 steps below its highest step and logs those steps again
(15 s of catching up, longer than the stall limit): MLflow's latest value does not move until the run
passes its old top. herowatch reads the steps logged again as they come: it records the restart (a step
rewind) and pages no ``progress_stalled``.
"""

from __future__ import annotations

import threading
import time

from mlflow import MlflowClient
from mlflow.entities import Metric

from tests.live.sources_support import source_stack
from tests.live.support import alerts_of, wait_for
from tests.mlflow_server import MlflowServer

RULES = "        progress_stalled: {floor: 6s, startup: 30s}\n"
STEP = 0.5
REWIND = 30


class Trainer(threading.Thread):
    def __init__(self, client: MlflowClient, run_id: str) -> None:
        super().__init__(daemon=True)
        self.client, self.run_id, self.stop = client, run_id, threading.Event()
        self.step, self.top = 0, 0
        self.restart = threading.Event()

    def run(self) -> None:
        while not self.stop.wait(STEP):
            if self.restart.is_set():
                self.restart.clear()
                self.stop.wait(2.0)  # the process restarts and restores the checkpoint
                self.step -= REWIND
            self.step += 1
            self.top = max(self.top, self.step)
            now = int(time.time() * 1000)
            metrics = {"loss": 2.0 - self.step / 1000, "grad_norm": 1.0, "learning_rate": 3e-4}
            self.client.log_batch(
                self.run_id, metrics=[Metric(k, v, now, self.step) for k, v in metrics.items()]
            )


def test_a_run_resumed_into_the_same_mlflow_run_is_a_rewind_not_a_stall(tmp_path):
    server = MlflowServer(tmp_path / "mlflow").start()
    trainer = None
    try:
        client = MlflowClient(server.url)
        exp = client.create_experiment("pretrain")
        run_id = client.create_run(exp, run_name="hero-a", tags={"hero": "true"}).info.run_id
        trainer = Trainer(client, run_id)
        trainer.start()
        with source_stack(tmp_path) as stack:
            source = (
                f"    mlflow: {{tracking_uri: '{server.url}', experiment: pretrain, "
                "filter: \"tags.hero = 'true'\", timeout: 3s, retries: 0, rewind_probe: 1s}"
            )
            hw = stack.serve(stack.write_config(source, RULES))
            rid = f"mlflow:pretrain/{run_id}"

            def step() -> int:
                return next((r.get("step") or 0 for r in hw.api("/api/runs") if r["id"] == rid), -1)

            wait_for(lambda: step() > 50, 90, "the run to be read")
            top = trainer.top
            trainer.restart.set()
            t0 = time.monotonic()
            wait_for(lambda: alerts_of(hw, "run_restarted"), 30, "the rewind to be recorded")
            print(f"rewind -> recorded: {time.monotonic() - t0:.1f}s")
            assert 0 <= step() <= top, "the step went back"
            wait_for(lambda: trainer.step > top + 10 and step() > top + 5, 60, "the run to pass its old top")
            assert stack.pages("progress_stalled") == [], "a healthy resumed run is no stall"
            assert alerts_of(hw, "progress_stalled") == []
            assert hw.errors() == "", hw.errors()
    finally:
        if trainer is not None:
            trainer.stop.set()
        server.stop()
