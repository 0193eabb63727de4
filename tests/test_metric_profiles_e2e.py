"""Every trainer's names: a Megatron-LM run and a Hugging Face Trainer run, logged to the W&B stand-in with
their real key names, get the same hero-pack alerts as a Levanter run on the same incident, with no
per-run config. The real wandb client, the whole engine and outbox, a ManualClock.

The three runs train the same curve (a seeded noise per step), one step per 10 s; at step 600 the loss
diverges and stays up, at step 900 it goes NaN.
"""

from __future__ import annotations

import math
import random
from pathlib import Path

from typer.testing import CliRunner

from alerts.clock import ManualClock
from monitor.cli.main import app
from monitor.storage.models import Run
from tests.dashboard.support import client
from tests.faults.support import alerts, cycle, service_for
from tests.standins.wandb_server import WandbStandin
from tests.wandb_support import ENTITY, KEY, PROJECT, wandb_standin_fixture, wid  # noqa: F401

DIVERGE, NAN, END = 600, 900, 960


def curve(step: int) -> dict[str, float]:
    """What the trainer measured at ``step``: the same for every run."""
    rnd = random.Random(step)
    loss = 2.2 + 3.0 / (1.0 + step / 150.0) + rnd.gauss(0.0, 0.02)
    if step >= DIVERGE:
        loss += 1.5
    if step >= NAN:
        loss = math.nan
    return {
        "loss": loss,
        "grad_norm": 0.6 + rnd.gauss(0.0, 0.03),
        "lr": 3e-4,
        "tokens_per_second": 4.0e5 * (1 + rnd.gauss(0.0, 0.01)),
        "tflops": 180.0 * (1 + rnd.gauss(0.0, 0.01)),
        "mfu": 42.0,
        "seconds": 10.0,
    }


def levanter(step: int, m: dict[str, float]) -> dict[str, float]:
    return {
        "train/loss": m["loss"],
        "grad/norm/total": m["grad_norm"],
        "optim/learning_rate": m["lr"],
        "throughput/tokens_per_second": m["tokens_per_second"],
        "throughput/mfu": m["mfu"],
        "throughput/duration": m["seconds"],
        "global_step": step,
    }


def megatron(step: int, m: dict[str, float]) -> dict[str, float]:
    """megatron/training/training.py training_log, with --log-throughput and --log-timers-to-tensorboard."""
    return {
        "lm loss": m["loss"],
        "grad-norm": m["grad_norm"],
        "learning-rate": m["lr"],
        "loss-scale": 1.0,
        "batch-size": 1024,
        "samples vs steps": 1024 * step,
        "iteration-time": m["seconds"],
        "throughput": m["tflops"],
    }


def huggingface(step: int, m: dict[str, float]) -> dict[str, float]:
    """Trainer.log through WandbCallback's rewrite_logs: train/<key>, and train/global_step."""
    return {
        "train/loss": m["loss"],
        "train/grad_norm": m["grad_norm"],
        "train/learning_rate": m["lr"],
        "train/epoch": step / 5000,
        "train/global_step": step,
    }


TRAINERS = {"lev": levanter, "meg": megatron, "hf": huggingface}
EXPECTED_PROFILE = {"lev": "levanter", "meg": "megatron", "hf": "huggingface"}

CONFIG = """
watch:
  - name: hero
    poll_interval: 60s
    wandb: {{entity: {entity}, project: {project}, tags: [hero], base_url: '{url}', timeout: 5s, retries: 0,
      rate_limit: 100000}}  # polls faster than real time, against a stand-in with no quota
rules: {{packs: [hero]}}
receivers: [{{name: console, kind: console}}]
route: {{receiver: console, group_wait: 0s}}
"""


def fired(service) -> dict[str, set[str]]:
    """run -> the rules that fired for it."""
    out: dict[str, set[str]] = {r: set() for r in TRAINERS}
    for a in alerts(service):
        if a.fired_at is not None:
            out.setdefault(a.run_id.rsplit("/", 1)[-1], set()).add(a.rule)  # by W&B run id
    return out


def test_megatron_and_hf_runs_get_the_levanter_runs_alerts(server: WandbStandin, tmp_path: Path) -> None:
    db_url = f"sqlite:///{tmp_path / 'hw.db'}"
    clock = ManualClock(server.clock)
    for run in TRAINERS:
        server.add_run(PROJECT, run, tags=["hero"])
    server.clock = clock.time()
    config = CONFIG.format(entity=ENTITY, project=PROJECT, url=server.url)
    service, _ = service_for(config, db_url, clock, WANDB_API_KEY=KEY)
    step, before_incident = 0, None
    try:
        while step < END:
            start = clock.time()
            for i in range(6):  # a minute of training: 6 steps, the same rows under each trainer's names
                m = curve(step + i)
                for run, names in TRAINERS.items():
                    server.log(
                        PROJECT,
                        run,
                        [{"_step": step + i, "_timestamp": start + 10 * (i + 1), **names(step + i, m)}],
                    )
            step += 6
            clock.advance(60.0)
            server.clock = clock.time()
            reports = cycle(service)
            assert not reports[0].errors, reports[0].errors
            if step == DIVERGE:
                before_incident = fired(service)
        after = fired(service)

        assert before_incident == {r: set() for r in TRAINERS}, "a healthy curve paged"
        assert {"loss_spike", "loss_nonfinite"} <= after["lev"], after
        assert after["meg"] == after["lev"], after
        assert after["hf"] == after["lev"], after

        with service.sessions() as s:
            detected = {r.name: r.stats["metrics_profile"] for r in s.query(Run)}
        for run, profile in EXPECTED_PROFILE.items():
            assert detected[run]["name"] == profile and detected[run]["how"] == "detected", detected[run]
            assert detected[run]["confidence"] >= 0.9
        api = client(service)
        shown = api.get("/api/runs/meg").json()["metrics_profile"]
        assert shown["name"] == "megatron" and "lm loss" in shown["keys"], shown
        assert "Megatron-LM" in api.get("/runs/meg").text  # the run page says whose names these are
        series = api.get("/api/runs/meg", params={"metrics": "train/loss"}).json()["series"]
        assert series["train/loss"]["buckets"], "charts are stored under the rules' names"

        cfg_file = tmp_path / "hw.yaml"
        cfg_file.write_text(config)
        out = CliRunner().invoke(app, ["check-config", str(cfg_file), "--explain", "--database-url", db_url])
        assert out.exit_code == 0, out.output
        assert "detected per run" in out.output
        assert f"run {wid('meg')}: detected megatron (confidence 1.00" in out.output, out.output
        assert f"run {wid('hf')}: detected huggingface" in out.output, out.output
    finally:
        service.stop()
