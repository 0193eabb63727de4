"""A run resumed from a checkpoint into the same MLflow run, against a real ``mlflow server``: the steps
it logs again below its highest are read as they come (MLflow's latest value does not move for them),
in time order so that the rules see the step go back, with a bounded number of requests."""

from __future__ import annotations

import time

import pytest
from mlflow import MlflowClient
from mlflow.entities import Metric

from monitor.sources.base import Target
from monitor.sources.mlflow_config import MlflowTarget
from monitor.sources.mlflow_source import MlflowSource
from tests.mlflow_server import MlflowServer

KEYS = ("loss", "grad_norm")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    srv = MlflowServer(tmp_path_factory.mktemp("mlflow")).start()
    yield srv
    srv.stop()


class Run:
    """A trainer logging every step through the real client, with a clock of its own (ms)."""

    def __init__(self, client: MlflowClient, exp: str, name: str) -> None:
        self.c, self.t = client, int(time.time() * 1000) - 10**7
        self.id = client.create_run(exp, run_name=name).info.run_id

    def log(self, steps: range, loss: float = 2.0) -> None:
        ms = []
        for s in steps:
            self.t += 1000
            ms += [Metric(k, loss, self.t, s) for k in KEYS]
        self.c.log_batch(self.id, metrics=ms)


def poll(src, target, cursors, now=None):
    res = src.poll(target, cursors, time.time() if now is None else now)
    assert res.error is None, res.error
    return res.validated()


def steps(res, run_id):
    return [s.step for s in res.samples if s.step is not None and s.run.endswith(run_id)]


def test_a_run_resumed_below_its_highest_step_is_read_as_it_logs(server):
    c = MlflowClient(server.url)
    exp = c.create_experiment("resumed")
    run, steady = Run(c, exp, "hero"), Run(c, exp, "steady")
    run.log(range(0, 300))
    steady.log(range(0, 300))
    src = MlflowSource()
    target = Target("w", MlflowTarget(tracking_uri=server.url, experiment="resumed", rewind_probe=30))
    first = poll(src, target, {}, now=1000.0)
    assert steps(first, run.id) == list(range(300))

    # the restart: from the checkpoint at 250, into the same MLflow run, logging with new times
    run.log(range(250, 270), loss=1.0)
    early = poll(src, target, first.cursors, now=1010.0)
    assert steps(early, run.id) == [], "the probe is due every 30 s only"
    assert early.requests == 1
    resumed = poll(src, target, first.cursors, now=1031.0)
    assert steps(resumed, run.id) == list(range(250, 270)), "the steps logged again, as they come"
    assert all(s.metrics == {"loss": 1.0, "grad_norm": 1.0} for s in resumed.samples if s.step is not None)
    assert steps(resumed, steady.id) == []
    assert resumed.requests <= 1 + 3, "the search, the lead key's windows, the other key"
    assert {r.run: r.heartbeat_at for r in resumed.runs}[f"mlflow:resumed/{run.id}"] == run.t / 1000

    # catching up: read on every poll while below the old top, then past it
    run.log(range(270, 290), loss=1.0)
    more = poll(src, target, resumed.cursors, now=1032.0)
    assert steps(more, run.id) == list(range(270, 290))
    run.log(range(290, 310), loss=1.0)
    past = poll(src, target, more.cursors, now=1033.0)
    assert steps(past, run.id) == list(range(290, 310)), "each step once, across the old top"
    quiet = poll(src, target, past.cursors, now=1034.0)
    assert steps(quiet, run.id) == [] and quiet.requests == 1

    # restart-safe: a new source with the stored cursors reads on where the last one stopped
    run.log(range(300, 305), loss=0.5)  # resumed again, below the new top
    again = poll(MlflowSource(), target, quiet.cursors, now=1100.0)
    assert steps(again, run.id) == list(range(300, 305))


def test_a_resume_that_passes_its_old_top_between_two_polls_still_shows_the_rewind(server):
    c = MlflowClient(server.url)
    exp = c.create_experiment("fast-resume")
    run = Run(c, exp, "hero")
    run.log(range(0, 2500))
    src = MlflowSource()
    target = Target("w", MlflowTarget(tracking_uri=server.url, experiment="fast-resume", page_steps=500))
    first = poll(src, target, {})
    run.log(range(1200, 2510), loss=1.0)  # 1300 steps below the top, then on: four windows down
    res = poll(src, target, first.cursors)
    assert steps(res, run.id) == list(range(1200, 2510))
