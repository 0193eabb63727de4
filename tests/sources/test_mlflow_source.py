"""The MLflow source against a real ``mlflow server``, runs logged through the real ``mlflow`` client:
incremental reads per key, states, runs leaving the filter, deleted runs, system metrics, requests per
poll, an outage."""

from __future__ import annotations

import math
import time

import pytest
from mlflow import MlflowClient

from monitor.sources.base import Target
from monitor.sources.mlflow_config import MlflowTarget
from monitor.sources.mlflow_source import MlflowSource
from tests.mlflow_server import MlflowServer


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    srv = MlflowServer(tmp_path_factory.mktemp("mlflow")).start()
    yield srv
    srv.stop()


def poll(src, target, cursors):
    res = src.poll(target, cursors, time.time())
    assert res.error is None, res.error
    return res.validated()


def test_reads_each_run_incrementally_and_follows_it_out_of_the_filter(server):
    c = MlflowClient(server.url)
    exp = c.create_experiment("incremental")
    hero = c.create_run(exp, run_name="hero-1", tags={"hero": "true"}).info.run_id
    other = c.create_run(exp, run_name="scratch", tags={"hero": "false"}).info.run_id
    for s in range(10):
        c.log_metric(hero, "train/loss", 3.0 - s / 10, step=s)
        c.log_metric(hero, "grad_norm", 1.0, step=s)
        c.log_metric(other, "train/loss", 1.0, step=s)
    c.log_metric(hero, "system/gpu_0_utilization_percentage", 97.0, step=0)
    src = MlflowSource()
    cfg = MlflowTarget(
        tracking_uri=server.url,
        experiment="incremental",
        filter="tags.hero = 'true' and attributes.status = 'RUNNING'",
    )
    target = Target("w", cfg)
    first = poll(src, target, {})
    key = f"mlflow:incremental/{hero}"
    assert [r.run for r in first.runs] == [key]
    assert first.runs[0].display_name == "hero-1" and first.runs[0].state == "running"
    rows = [s for s in first.samples if s.step is not None]
    assert [s.step for s in rows] == list(range(10))
    assert rows[0].metrics == {"train/loss": 3.0, "grad_norm": 1.0}
    system = [s for s in first.samples if "system/gpu_0_utilization_percentage" in s.metrics]
    assert len(system) == 1 and system[0].step is None  # its own counter is not the training step

    quiet = src.poll(target, first.cursors, time.time())
    assert quiet.requests == 1, "nothing moved: one search, no history request"
    assert [s.state for s in quiet.samples] == ["running"]

    c.log_metric(hero, "train/loss", math.nan, step=10)
    c.set_terminated(hero, "FAILED")  # leaves the filter's status = 'RUNNING'
    second = poll(src, target, first.cursors)
    assert [(s.step, s.state) for s in second.samples if s.step is not None or s.state] == [
        (10, None),
        (None, "failed"),
    ]
    assert math.isnan(second.samples[0].metrics["train/loss"])
    assert second.requests == 3  # the search, the followed run by id, one moved key

    c.delete_run(hero)
    gone = poll(src, target, second.cursors)
    assert [(r.run, r.state) for r in gone.runs] == [(key, "deleted")]
    assert poll(src, target, gone.cursors).runs == []  # said once


def test_a_missing_experiment_and_a_server_that_is_down_are_errors(server):
    missing = MlflowSource().poll(
        Target("w", MlflowTarget(tracking_uri=server.url, experiment="nope")), {}, 0.0
    )
    assert "no experiment named 'nope'" in missing.error
    down = MlflowTarget(tracking_uri="http://127.0.0.1:9", experiment="x", timeout=1, retries=0)
    t0 = time.monotonic()
    res = MlflowSource().poll(Target("w", down), {}, 0.0)
    assert res.error and time.monotonic() - t0 < 10


def test_runs_logging_in_step_share_one_history_request_per_key(server):
    c = MlflowClient(server.url)
    exp = c.create_experiment("lockstep")
    runs = [c.create_run(exp, run_name=f"r{i}").info.run_id for i in range(5)]
    for r in runs:
        for s in range(20):
            c.log_metric(r, "loss", 2.0, step=s)
            c.log_metric(r, "grad_norm", 1.0, step=s)
    src = MlflowSource()
    target = Target("w", MlflowTarget(tracking_uri=server.url, experiment="lockstep"))
    first = poll(src, target, {})
    assert first.requests == 1 + 1 + 2, "the experiment, the search, one read per key for all 5 runs"
    assert sorted(s.step for s in first.samples if s.step is not None) == sorted(list(range(20)) * 5)
    for r in runs[:3]:
        c.log_metric(r, "loss", 1.5, step=20)
    c.log_metric(runs[3], "loss", 1.4, step=25)
    moved = poll(src, target, first.cursors)
    assert moved.requests == 2, "the search and one read of loss for the 4 runs that moved"
    got = sorted((s.run.rsplit("/", 1)[1], s.step) for s in moved.samples if s.step is not None)
    assert got == sorted([(r, 20) for r in runs[:3]] + [(runs[3], 25)]), "each run's new steps, once"


def test_doctor_looks_at_the_server_and_judges_the_runs(server, tmp_path):
    import json

    from typer.testing import CliRunner

    from monitor.cli.main import app

    c = MlflowClient(server.url)
    exp = c.create_experiment("doctor")
    run = c.create_run(exp, run_name="sft-1", tags={"hero": "true"}).info.run_id
    for s in range(30):
        c.log_metric(run, "loss", 1.0, step=s)
        c.log_metric(run, "learning_rate", 1e-5, step=s)
        c.log_metric(run, "grad_norm", 1.0, step=s)
    cfg = tmp_path / "hw.yaml"
    cfg.write_text(
        f"watch:\n  - name: m\n    mlflow: {{tracking_uri: '{server.url}', experiment: doctor, "
        "filter: \"tags.hero = 'true'\"}\n"
    )
    r = CliRunner().invoke(app, ["doctor", "--config", str(cfg), "--json"])
    text = json.dumps(json.loads(r.stdout[r.stdout.index("{") :]))
    assert "experiment 'doctor' found" in text and "sft-1" in text and "huggingface" in text, text[:3000]


def test_a_long_experiment_name_shortens_the_run_id_and_loses_nothing(server):
    c = MlflowClient(server.url)
    name = "a-very-long-experiment-name-" * 7
    exp = c.create_experiment(name)
    run_id = c.create_run(exp, run_name="hero-long").info.run_id
    for s in range(3):
        c.log_metric(run_id, "train/loss", 1.0, step=s)
    src = MlflowSource()
    target = Target("w", MlflowTarget(tracking_uri=server.url, experiment=name))
    first = poll(src, target, {})
    assert len(f"mlflow:{name}/{run_id}") > 200
    [run] = first.runs
    assert len(run.run) == 200 and run.run.startswith("mlflow:") and "~" in run.run
    assert run.display_name == "hero-long" and run.name == run_id
    assert sorted(s.step for s in first.samples if s.step is not None) == [0, 1, 2]
    c.log_metric(run_id, "train/loss", 0.5, step=3)
    c.set_terminated(run_id, "FAILED")
    second = poll(MlflowSource(), target, first.cursors)  # a restart: the stored cursors only
    assert [r.run for r in second.runs] == [run.run]
    assert [s.step for s in second.samples if s.step is not None] == [3], "from its cursor, once"
    assert second.runs[0].state == "failed"
