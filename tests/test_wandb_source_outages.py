"""The W&B source when things go wrong, with the real ``wandb`` client against the local stand-in:
server errors, timeouts, rate limits, a server going down, refused keys, deleted runs, secrets; plus the
stand-in's fidelity to the client, the config model and the retry helper.

The only real waiting is the client's own timeout, one second in these tests.
"""

from __future__ import annotations

import base64
import logging
import os
import subprocess
import sys

import pytest
from pydantic import ValidationError

from monitor.config.schema import Watch
from monitor.sources.registry import source_class
from monitor.sources.retry import backoff_delay, retry_call
from monitor.sources.wandb_client import prepare_environment
from monitor.sources.wandb_config import WandbTarget
from monitor.sources.wandb_source import WandbSource
from tests.conftest import REPO
from tests.standins.wandb_server import Fault, WandbStandin
from tests.wandb_support import (
    ENTITY,
    KEY,
    PROJECT,
    Watcher,
    state_of,
    steps,
    wandb_standin_fixture,  # noqa: F401  (the server fixture)
    wid,
)


# ---- outages -----------------------------------------------------------------------------------------
def test_server_errors_make_the_source_unavailable_and_polling_recovers(server: WandbStandin) -> None:
    server.add_run(PROJECT, "r1", tags=["hero"])
    server.log_steps(PROJECT, "r1", 0, 10)
    w = Watcher(server, tags=["hero"], timeout=1)
    w.poll()
    before = dict(w.cursors)
    server.log_steps(PROJECT, "r1", 10, 20)
    server.fail(500, times=-1)
    res = w.poll()
    assert res.error and "Runs" in res.error and res.samples == [] and res.cursors == {}
    assert w.cursors == before and server.count() >= 1

    server.clear_faults()
    server.fail(500, times=-1, operations={"HistoryPage"})  # listing fine, history not: still unavailable
    res = w.poll()
    assert res.error and "HistoryPage" in res.error and res.samples == []

    server.clear_faults()
    res = w.poll()
    assert res.error is None and steps(res, "r1") == list(range(10, 20))  # nothing lost in the outage


def test_timeouts_make_the_source_unavailable(server: WandbStandin) -> None:
    server.add_run(PROJECT, "r1", tags=["hero"])
    w = Watcher(server, tags=["hero"], timeout=1)
    w.poll()
    server.slow(5.0, times=-1)
    res = w.poll()
    assert res.error and "no answer in time" in res.error and res.samples == []
    server.clear_faults()
    assert w.poll().error is None


def test_retries_with_backoff_ride_out_a_short_outage(server: WandbStandin) -> None:
    server.add_run(PROJECT, "r1", tags=["hero"])
    w = Watcher(server, tags=["hero"], timeout=1, retries=2, backoff=0.5)
    w.poll()
    server.inject(Fault(drop=True, times=1, operations=frozenset({"Runs"})))
    res = w.poll()
    assert res.error is None and len(w.waits) == 1 and 0.25 <= w.waits[0] <= 0.5
    assert res.requests == 2


def test_rate_limit_retry_after_is_honoured(server: WandbStandin) -> None:
    server.add_run(PROJECT, "r1", tags=["hero"])
    w = Watcher(server, tags=["hero"], timeout=3)
    w.poll()
    server.fail(429, times=1, retry_after=1)
    res = w.poll()
    assert res.error is None and [r.status for r in server.requests] == [429, 200]


def test_server_down_then_back(server: WandbStandin) -> None:
    server.add_run(PROJECT, "r1", tags=["hero"])
    server.log_steps(PROJECT, "r1", 0, 5)
    w = Watcher(server, tags=["hero"], timeout=1)
    w.poll()
    server.stop()
    res = w.poll()
    assert res.error and res.samples == []
    server.start()  # same port
    server.log_steps(PROJECT, "r1", 5, 7)
    assert steps(w.poll(), "r1") == [5, 6]


def test_refused_or_missing_key_is_an_error_not_an_exception(server: WandbStandin) -> None:
    wrong = "hwtest0" + "0" * 48
    res = Watcher(server, key=wrong, tags=["hero"]).poll()
    assert res.error and "sign in" in res.error and wrong not in res.error
    res = Watcher(server, key=None, tags=["hero"]).poll()
    assert res.error and "WANDB_API_KEY" in res.error
    res = Watcher(server, project="no-such-project").poll()
    assert res.error and "not found" in res.error


def test_a_deleted_run_is_reported_once_without_crashing(server: WandbStandin) -> None:
    for run in ("keep", "gone", "midway"):
        server.add_run(PROJECT, run, tags=["hero"])
        server.log_steps(PROJECT, run, 0, 5)
    w = Watcher(server, tags=["hero"])
    w.poll()
    server.delete_run(PROJECT, "gone")
    for run in ("keep", "midway"):
        server.log_steps(PROJECT, run, 5, 7)

    def delete_midway(operation: str, variables: dict) -> None:  # between the listing and its history
        if operation == "HistoryPage" and variables["run"] == "midway":
            server.delete_run(PROJECT, "midway")

    server.before_answer = delete_midway
    res = w.poll()
    assert res.error is None and steps(res, "keep") == [5, 6]
    assert state_of(res, "gone") == "deleted" and state_of(res, "midway") == "deleted"
    assert {r.name: r.state for r in res.runs}["gone"] == "deleted"
    assert w.cursor("gone")["deleted"] is True
    res = w.poll()
    assert res.error is None and {s.run for s in res.samples} == {wid("keep")}  # reported once


def test_cursors_of_other_projects_are_left_alone(server: WandbStandin) -> None:
    server.add_run(PROJECT, "mine", tags=["hero"])
    w = Watcher(server, tags=["hero"])
    # the engine hands a watch that knows no runs yet every W&B cursor, other watches' included
    w.cursors = {wid("theirs", "other"): {"project": f"{ENTITY}/other", "step": 5, "lines": 6}}
    res = w.poll()
    assert res.error is None and [r.name for r in res.runs] == ["mine"] and set(res.cursors) == {wid("mine")}
    (listing,) = [r for r in server.requests if r.operation == "Runs"]
    assert "theirs" not in listing.variables["filters"]
    assert res.cursors[wid("mine")]["project"] == f"{ENTITY}/{PROJECT}"


def test_the_api_key_never_reaches_logs_or_errors(
    server: WandbStandin, caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]
) -> None:
    caplog.set_level(logging.DEBUG)
    server.add_run(PROJECT, "r1", tags=["hero"])
    server.log_steps(PROJECT, "r1", 0, 5)
    w = Watcher(server, tags=["hero"], timeout=1, retries=1, backoff=0.01)
    errors = [w.poll().error]
    server.fail(500, times=-1)
    errors.append(w.poll().error)
    server.clear_faults()
    server.fail(401, times=-1)
    errors.append(w.poll().error)
    assert errors[0] is None and errors[1] and "API key was refused" in (errors[2] or "")
    basic = base64.b64encode(f"api:{KEY}".encode()).decode()
    out, err = capfd.readouterr()
    for text in (caplog.text, out, err, repr(w.source.__dict__), *map(str, errors)):
        assert KEY not in text and basic not in text


def test_wandb_writes_nothing_to_home(server: WandbStandin, tmp_path) -> None:
    server.add_run(PROJECT, "r1", tags=["hero"])
    server.log_steps(PROJECT, "r1", 0, 3)
    home = tmp_path / "home"
    home.mkdir()
    code = (
        "import sys\n"
        "from monitor.settings import Settings\n"
        "from monitor.sources.base import Target\n"
        "from monitor.sources.wandb_config import WandbTarget\n"
        "from monitor.sources.wandb_source import WandbSource\n"
        "cfg = WandbTarget(entity=sys.argv[1], project=sys.argv[2], base_url=sys.argv[3], timeout=10)\n"
        "res = WandbSource(Settings()).poll(Target('w', cfg), {}, 0.0)\n"
        "print(res.error, len(res.samples))\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WANDB", "XDG_"))}
    env.update(HOME=str(home), WANDB_API_KEY=KEY, PYTHONPATH=str(REPO))
    done = subprocess.run(
        [sys.executable, "-c", code, ENTITY, PROJECT, server.url],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["None", "4"]
    assert sorted(p.relative_to(home).as_posix() for p in home.rglob("*")) == []
    assert KEY not in done.stdout + done.stderr


# ---- stand-in fidelity: why the source sends HistoryPage itself -------------------------------------
def test_client_scan_history_against_the_stand_in(server: WandbStandin) -> None:
    server.add_run(PROJECT, "r1", tags=["hero"])
    server.log(
        PROJECT,
        "r1",
        [
            {"_step": s, "train/loss": 1.0 / (s + 1), **({"eval/loss": 2.0} if s % 10 == 0 else {})}
            for s in range(30)
        ],
    )
    prepare_environment()
    import wandb

    api = wandb.Api(overrides={"base_url": server.url}, api_key=KEY, timeout=5)
    run = api.run(f"{ENTITY}/{PROJECT}/r1")
    server.reset_requests()
    rows = list(run.scan_history(min_step=25))
    assert [r["_step"] for r in rows] == [25, 26, 27, 28, 29]
    assert [r.operation for r in server.requests] == ["RunHistoryKeys", "RunParquetHistory", "HistoryPage"]
    assert server.history_ranges() == [("r1", 25, 30)]  # maxStep exclusive
    keyed = list(run.scan_history(keys=["train/loss", "eval/loss"]))
    assert [r["_step"] for r in keyed] == [0, 10, 20]  # only rows holding every key
    assert server.count("SampledHistoryPage") == 1


# ---- config, registry, retry helper --------------------------------------------------------------------
def test_config_validation_and_registration() -> None:
    t = WandbTarget(entity="e", project="p", timeout="30s", name_pattern="^hero-.*")
    assert t.timeout == 30.0 and "train/loss" in t.keys and t.base_url == "https://api.wandb.ai"
    with pytest.raises(ValidationError, match="regular expression"):
        WandbTarget(entity="e", project="p", name_pattern="hero-(")
    with pytest.raises(ValidationError):
        WandbTarget(entity="e", project="p", api_key="nope")  # extra fields are refused
    with pytest.raises(ValidationError):
        WandbTarget(entity="e", project="p", states=["runnin"])
    watch = Watch.model_validate({"name": "hero", "wandb": {"entity": "e", "project": "p", "tags": ["hero"]}})
    assert watch.targets()["wandb"].tags == ["hero"]
    assert source_class("wandb") is WandbSource


def test_retry_call_backs_off_with_jitter_and_gives_up() -> None:
    calls, waits = [], []

    def flaky() -> str:
        calls.append(1)
        if len(calls) < 3:
            raise TimeoutError("slow")
        return "ok"

    assert retry_call(flaky, 5, 1.0, 10.0, 0.5, lambda e: True, sleep=waits.append) == "ok"
    assert len(calls) == 3 and 0.5 <= waits[0] <= 1.0 and 1.0 <= waits[1] <= 2.0
    with pytest.raises(ValueError):
        retry_call(
            lambda: (_ for _ in ()).throw(ValueError("no")),
            5,
            1.0,
            10.0,
            0.5,
            lambda e: isinstance(e, TimeoutError),
            sleep=waits.append,
        )
    assert len(waits) == 2  # not retried
    assert backoff_delay(10, 1.0, 8.0, 0.0) == 8.0
