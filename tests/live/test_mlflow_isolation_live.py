"""One MLflow run's bad history never blinds its watch, live (issue 37, item 6): ``herowatch serve``
watching a real ``mlflow server`` through a stand-in that answers every metric history request naming
run hero-a with a 500 (the request it shares with hero-b included). Before, the whole watch was
unavailable and hero-b's NaN loss never paged.

hero-a gets its own ``source_unavailable`` naming the run and the 500, in Slack; hero-b keeps being read
and its NaN loss pages; nothing else is unavailable; nothing is logged as an error."""

from __future__ import annotations

import time

from mlflow import MlflowClient

from tests.live.sources_support import source_stack
from tests.live.support import alerts_of, wait_for
from tests.live.test_mlflow_live import RULES, Trainer
from tests.mlflow_hostile import Hostile
from tests.mlflow_server import MlflowServer


def test_one_runs_failing_history_blinds_only_that_run_live(tmp_path):
    server = MlflowServer(tmp_path / "mlflow").start()
    proxy = Hostile(server.url)
    trainer = None
    try:
        client = MlflowClient(server.url)
        exp = client.create_experiment("pretrain")
        runs = {name: client.create_run(exp, run_name=name).info.run_id for name in ("hero-a", "hero-b")}
        proxy.bad = runs["hero-a"]
        trainer = Trainer(client, runs)
        trainer.start()
        with source_stack(tmp_path) as stack:
            source = (
                "    unavailable_after: 3s\n    unavailable_page_after: 6s\n"
                f"    mlflow: {{tracking_uri: '{proxy.url}', experiment: pretrain, timeout: 3s, retries: 0}}"
            )
            hw = stack.serve(stack.write_config(source, RULES))
            ids = {name: f"mlflow:pretrain/{rid}" for name, rid in runs.items()}

            def step_of(name: str) -> int:
                return next((r.get("step") or 0 for r in hw.api("/api/runs") if r["id"] == ids[name]), -1)

            wait_for(lambda: step_of("hero-b") > 10, 60, "the healthy run to be read")
            bad = ids["hero-a"]
            firing = wait_for(
                lambda: [a for a in alerts_of(hw, "source_unavailable", "firing") if a["run"] == bad],
                60,
                "hero-a's own source_unavailable",
                seen=lambda: alerts_of(hw, "source_unavailable"),
            )
            assert "HTTP 500" in str(firing[0]) and runs["hero-a"] in str(firing[0]), firing
            wait_for(lambda: stack.pages("hero-a", "500"), 30, "hero-a's unreadable history in Slack")

            trainer.nan.add("hero-b")
            t0 = time.monotonic()
            wait_for(lambda: stack.pages("loss_nonfinite", "hero-b"), 30, "hero-b's NaN page")
            print(f"NaN of the healthy run -> page: {time.monotonic() - t0:.1f}s")
            others = [
                a
                for a in alerts_of(hw, "source_unavailable") + alerts_of(hw, "source_down")
                if a["run"] != ids["hero-a"]
            ]
            assert not others, others
            assert step_of("hero-a") <= 0, "nothing of hero-a's history was read through the 500s"
            assert proxy.hostile > 0
            assert not hw.errors(), hw.errors()
    finally:
        if trainer is not None:
            trainer.stop.set()
        proxy.close()
        server.stop()
