"""One MLflow run's bad history answer never blinds its watch (issue 37, item 6): in front of a real
``mlflow server``, a stand-in passes every request through except the history of one run, which it
answers with a 500, with 100 MB, or with something that is not JSON. The poll still reads the other run
(including the request the two shared), sets the bad run aside as unreadable with the reason, keeps its
cursor, and reads it once its answers are sound again."""

from __future__ import annotations

import math
import time

import pytest
from mlflow import MlflowClient

from monitor.sources.base import Target
from monitor.sources.mlflow_config import MlflowTarget
from monitor.sources.mlflow_source import MlflowSource
from tests.mlflow_hostile import Hostile
from tests.mlflow_server import MlflowServer


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    srv = MlflowServer(tmp_path_factory.mktemp("mlflow")).start()
    yield srv
    srv.stop()


def steps(res, run_id):
    return sorted(s.step for s in res.samples if s.step is not None and s.run.endswith(run_id))


@pytest.mark.parametrize("how", ["500", "100 MB", "not json"])
def test_one_runs_bad_history_answer_sets_that_run_aside_and_the_other_is_read(server, how):
    c = MlflowClient(server.url)
    name = f"isolation-{how.replace(' ', '-')}"
    exp = c.create_experiment(name)
    good = c.create_run(exp, run_name="good").info.run_id
    bad = c.create_run(exp, run_name="bad").info.run_id
    for s in range(10):  # in step: both runs' loss shares one request
        c.log_metric(good, "loss", 2.0, step=s)
        c.log_metric(bad, "loss", 2.0, step=s)
    proxy = Hostile(server.url)
    proxy.bad, proxy.how = bad, how
    try:
        src = MlflowSource()
        target = Target("w", MlflowTarget(tracking_uri=proxy.url, experiment=name, retries=0, timeout=20))
        first = src.poll(target, {}, time.time())
        assert first.error is None, first.error
        assert steps(first, good) == list(range(10)), "the good run is read whole"
        assert steps(first, bad) == []
        why = first.unreadable[f"mlflow:{name}/{bad}"]
        assert bad in why and "'loss'" in why
        assert {"500": "HTTP 500", "100 MB": "max_answer_bytes", "not json": "not JSON"}[how] in why, why
        assert f"mlflow:{name}/{good}" not in first.unreadable
        assert proxy.hostile == 2, "the shared request, then the bad run alone: once each"
        assert {r.run for r in first.runs} == {f"mlflow:{name}/{good}", f"mlflow:{name}/{bad}"}

        c.log_metric(good, "loss", math.nan, step=10)  # what a rule pages on: it still arrives
        second = src.poll(target, first.cursors, time.time()).validated()
        assert second.error is None, second.error
        got = [s for s in second.samples if s.step is not None and s.run.endswith(good)]
        assert [s.step for s in got] == [10] and math.isnan(got[0].metrics["loss"])
        assert f"mlflow:{name}/{bad}" in second.unreadable, "still unreadable: said again"

        proxy.bad = None  # its answers are sound again: nothing it logged was lost
        healed = src.poll(target, second.cursors, time.time())
        assert healed.error is None and healed.unreadable == {}
        assert steps(healed, bad) == list(range(10))
        assert steps(healed, good) == []
    finally:
        proxy.close()


def test_a_server_whose_every_history_answer_fails_is_an_outage_not_unreadable_runs(server):
    c = MlflowClient(server.url)
    exp = c.create_experiment("isolation-all")
    runs = [c.create_run(exp, run_name=f"r{i}").info.run_id for i in range(2)]
    for r in runs:
        c.log_metric(r, "loss", 1.0, step=0)
    proxy = Hostile(server.url)
    proxy.bad = "history"  # every history request
    try:
        target = Target("w", MlflowTarget(tracking_uri=proxy.url, experiment="isolation-all", retries=0))
        res = MlflowSource().poll(target, {}, time.time())
    finally:
        proxy.close()
    assert res.error is not None and "HTTP 500" in res.error
    assert res.unreadable == {}
