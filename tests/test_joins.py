"""One run through several sources (#43, item 3): a Slurm job, its W&B run and its log, joined by a key
the config names, are one run ``join:<watch>/<key>``: the scheduler's word on the state wins, steps and
each metric come from one part, each part keeps its own id and cursor, and the run page's sources table
says which source gave what, after a restart too."""

from __future__ import annotations

from urllib.parse import quote

import pytest
from fastapi.testclient import TestClient
from pydantic import ValidationError
from sqlalchemy import select

from monitor.config.joins import JoinConfig, fields_of, key_of
from monitor.config.loader import parse_config
from monitor.engine.joins import MEMBER, Joins
from monitor.samples import JobAlert, RunInfo, RunState, Sample
from monitor.sources.base import PollResult
from monitor.storage.models import Alert, Run, SourceCursor
from monitor.web.app import create_app
from tests.helpers import make_service

JOB, WB = "slurm:c1/4242", "wandb:org/proj/ab12cd34"
JOINED = "join:hero/4242"

CONFIG = """
watch:
  - name: hero
    poll_interval: 30s
    slurm: {jobs: "hero-*"}
    wandb: {entity: org, project: proj}
    join:
      by:
        slurm: "{slurm_job}"
        wandb: "{tags~slurm-(\\\\d+)}"
"""


# ---- the key --------------------------------------------------------------------------------------
def test_keys_come_from_labels_names_and_patterns_over_tags():
    wandb = fields_of("ab12cd34", "llama-70b", "org/proj", {"tag.hero": "true", "tag.slurm-4242": "true"})
    assert key_of("{tags~slurm-(\\d+)}", wandb) == "4242"
    assert key_of("{display_name}", wandb) == "llama-70b"
    assert key_of("{display_name~^(llama)}-{name}", wandb) == "llama-ab12cd34"
    slurm = fields_of("hero-70b", "hero-70b (4242)", "c1", {"slurm_job": "4242", "hosts": "n[1-4]"})
    assert key_of("{slurm_job}", slurm) == "4242"
    # a field the run lacks, or a pattern that finds nothing: no key (the run stays its own)
    assert key_of("{tags~slurm-(\\d+)}", slurm) is None
    assert key_of("{tags~slurm-(\\d+)}", fields_of("x", None, None, {"tag.hero": "true"})) is None


def test_the_config_says_what_is_wrong_with_a_join():
    with pytest.raises(ValidationError, match="at least two sources"):
        JoinConfig(by={"slurm": "{slurm_job}"})
    with pytest.raises(ValidationError, match="names no field"):
        JoinConfig(by={"slurm": "slurm_job", "wandb": "{name}"})
    with pytest.raises(ValidationError, match="pattern"):
        JoinConfig(by={"slurm": "{slurm_job}", "wandb": "{tags~slurm-(}"})
    bad = CONFIG.replace('wandb: "{tags', 'logs: "{tags')
    with pytest.raises(Exception, match="not a source of this watch"):
        parse_config(bad, "t.yaml")
    assert JoinConfig(by={"wandb": "{name}", "slurm": "{name}"}).state_order() == ["slurm", "wandb"]


# ---- the join, pure -------------------------------------------------------------------------------
def slurm_poll(state="RUNNING", t=100.0, exit_code=None, log_steps=()):
    metrics = {"restarts_total": 0.0, **({"exit_code": float(exit_code)} if exit_code is not None else {})}
    samples = [
        Sample(t=t, run=JOB, state=state.lower() if state != "RUNNING" else "running", metrics=metrics)
    ]
    samples += [Sample(t=t, run=JOB, step=s, metrics={"train/loss": 2.0}, source="slurm") for s in log_steps]
    labels = {"source": "slurm", "slurm_job": "4242", "slurm_state": state, "hosts": "node[01-04]"}
    labels |= {"slurm_reason": "NonZeroExitCode"} if state == "FAILED" else {}
    info = RunInfo(
        run=JOB,
        source="slurm",
        display_name="hero-70b (4242)",
        state=samples[0].state,
        labels=labels,
        name="hero-70b",
        project="c1",
    )
    return PollResult(samples=samples, runs=[info], cursors={JOB: {"slurm": [state, exit_code, 0]}})


def wandb_poll(state="running", t=100.0, steps=(), cursor=None):
    samples = [Sample(t=t, run=WB, state=state)]
    samples += [Sample(t=t, run=WB, step=s, metrics={"train/loss": 3.0, "gpu/util": 0.9}) for s in steps]
    info = RunInfo(
        run=WB,
        source="wandb",
        display_name="llama-70b",
        state=state,
        labels={"source": "wandb", "tag.slurm-4242": "true"},
        url="https://wandb.ai/x",
        name="ab12cd34",
        project="org/proj",
    )
    return PollResult(
        samples=samples,
        runs=[info],
        cursors={WB: cursor or {"step": max(steps, default=0)}},
        logged={WB: ["train/loss"]},
    )


def joins() -> Joins:
    return Joins("hero", JoinConfig(by={"slurm": "{slurm_job}", "wandb": "{tags~slurm-(\\d+)}"}))


def test_parts_become_one_run_whose_state_is_the_schedulers():
    j = joins()
    out = j.join(
        {"wandb": wandb_poll("finished", steps=[10, 11]), "slurm": slurm_poll("FAILED", exit_code=1)}, 100
    )
    runs = [i for r in out.values() for i in r.runs]
    assert [i.run for i in runs] == [JOINED]
    [info] = runs
    assert info.state == RunState.FAILED and info.source == "slurm"  # not W&B's "finished"
    assert info.display_name == "hero-70b (4242)" and info.url == "https://wandb.ai/x"
    assert info.labels["hosts"] == "node[01-04]" and info.labels["sources"] == "slurm,wandb"
    states = [s.state for r in out.values() for s in r.samples if s.state is not None]
    assert states == ["failed"], "W&B's finished never reaches the run"
    assert {s.run for r in out.values() for s in r.samples} == {JOINED}
    # each part's cursor is kept under the joined run, with its own id
    assert out["wandb"].cursors == {JOINED: {"step": 11, MEMBER: WB}}
    assert out["slurm"].cursors[JOINED][MEMBER] == JOB
    assert out["wandb"].logged == {JOINED: ["train/loss"]}
    # ... and handed back to the source under that id
    assert j.cursors_in(out["wandb"].cursors) == {WB: {"step": 11}}


def test_steps_and_each_metric_come_from_one_part():
    """The StdOut's iterations and W&B's _step differ: two step counters would read as restarts."""
    j = joins()
    out = j.join({"slurm": slurm_poll(log_steps=[500, 501]), "wandb": wandb_poll(steps=[7, 8])}, 100)
    steps = sorted(s.step for r in out.values() for s in r.samples if s.step is not None)
    assert steps == [500, 501]
    wb = [s for s in out["wandb"].samples if s.metrics]
    assert wb and all(s.step is None and set(s.metrics) == {"gpu/util"} for s in wb), wb
    # a job alert (a crash line) comes through from any part
    crash = Sample(
        t=101, run=WB, alert=JobAlert("CUDA out of memory", "x", "error"), metrics={"job/alert": 3.0}
    )
    out = j.join({"wandb": PollResult(samples=[crash])}, 101)
    assert [s.alert.title for s in out["wandb"].samples] == ["CUDA out of memory"]
    table = {r["source"]: r for r in j.facts(JOINED)["sources"]}
    assert table["slurm"]["gives"][:2] == ["state", "steps"] and "train/loss" in table["slurm"]["gives"]
    assert table["slurm"]["run"] == JOB and table["wandb"]["run"] == WB
    assert "gpu/util" in table["wandb"]["gives"] and "train/loss" in table["wandb"]["also"]
    assert "alerts" in table["wandb"]["gives"]


def test_before_the_scheduler_answers_the_tracker_gives_the_state_then_slurm_does():
    j = joins()
    out = j.join({"wandb": wandb_poll("running", t=50)}, 50)
    assert [i.state for i in out["wandb"].runs] == [RunState.RUNNING]
    out = j.join({"wandb": wandb_poll("finished", t=100), "slurm": slurm_poll("OUT_OF_MEMORY")}, 100)
    states = [s.state for r in out.values() for s in r.samples if s.state is not None]
    assert states == ["out_of_memory"]  # Slurm's word (made a RunState where it enters herowatch)


def test_a_second_run_of_one_source_with_a_held_key_stays_its_own():
    j = joins()
    j.join({"wandb": wandb_poll()}, 100)
    other = RunInfo(run="wandb:org/proj/zz", source="wandb", labels={"tag.slurm-4242": "true"})
    out = j.join(
        {"wandb": PollResult(runs=[other], samples=[Sample(t=1, run="wandb:org/proj/zz", step=1)])}, 101
    )
    assert [i.run for i in out["wandb"].runs] == ["wandb:org/proj/zz"]
    assert [s.run for s in out["wandb"].samples] == ["wandb:org/proj/zz"]


def test_a_watch_without_join_is_untouched():
    j = Joins("hero", None)
    res = {"wandb": wandb_poll(steps=[1])}
    assert j.join(res, 1) is res and j.facts(WB) == {}


# ---- in the engine -------------------------------------------------------------------------------
class Fake:
    """A source that answers what a test gives it, and keeps the cursors it was handed."""

    def __init__(self, kind):
        self.kind, self.next, self.seen = kind, PollResult(), []

    def poll(self, target, cursors, now):
        self.seen.append(dict(cursors))
        return self.next

    def close(self):
        pass


def serve(url, clock):
    service, _ = make_service(url, clock, CONFIG)
    fakes = {k: Fake(k) for k in ("slurm", "wandb")}
    service.engine.sources.update(fakes)
    service.engine.resume()
    return service, fakes


def test_the_engine_keeps_one_run_pages_slurms_failure_and_remembers_its_parts(migrated_url, clock):
    service, fakes = serve(migrated_url, clock)
    t = clock.time()
    for i in range(4):
        clock.advance(30)
        fakes["slurm"].next = slurm_poll("RUNNING", t=clock.time(), log_steps=[100 + 2 * i, 101 + 2 * i])
        fakes["wandb"].next = wandb_poll("running", t=clock.time(), steps=[i])
        service.engine.poll("hero")
    clock.advance(30)
    fakes["slurm"].next = slurm_poll("FAILED", t=clock.time(), exit_code=137)
    fakes["wandb"].next = wandb_poll("finished", t=clock.time())
    service.engine.poll("hero")
    with service.sessions() as s:
        assert [r.id for r in s.scalars(select(Run))] == [JOINED]
        run = s.get(Run, JOINED)
        assert run.state == RunState.FAILED and run.restarts == 0 and run.last_step == 107
        crashed = s.scalars(select(Alert).where(Alert.rule == "run_crashed")).all()
        assert [(a.state, a.labels["run"]) for a in crashed] == [("firing", JOINED)]
        summary = crashed[0].annotations["summary"]
        assert "137" in summary and summary.endswith("; Slurm says FAILED: NonZeroExitCode"), summary
        assert "slurm_state" not in crashed[0].labels and "hosts" not in crashed[0].labels
        table = {r["source"]: r for r in run.stats["sources"]}
        assert table["slurm"]["run"] == JOB and table["slurm"]["last_at"] == clock.time()
        assert table["wandb"]["run"] == WB and "state" in table["wandb"]["also"]
        cursors = {c.source: c.cursor for c in s.scalars(select(SourceCursor))}
        assert cursors["wandb"][MEMBER] == WB and cursors["slurm"][MEMBER] == JOB
    assert fakes["wandb"].seen[-1] == {WB: {"step": 3}}, "the source reads its cursor under its own id"
    # the run page says which source gave what; the API too
    web = TestClient(create_app(service), base_url="http://localhost")
    page = web.get("/runs/" + quote(JOINED, safe="")).text
    table = page[page.index("<h2>Sources</h2>") :]
    table = table[: table.index("</section>")]
    assert "slurm:c1/4242" in table and "wandb:org/proj/ab12cd34" in table
    assert "<code>state</code>, <code>steps</code>" in table and "also logs state" in table
    detail = web.get("/api/runs/" + quote(JOINED, safe="")).json()
    assert [(p["source"], p["run"]) for p in detail["sources"]] == [("slurm", JOB), ("wandb", WB)]
    service.stop()

    # restarted: the parts' cursors and who gives what are read back
    service, fakes = serve(migrated_url, clock)
    clock.advance(30)
    fakes["wandb"].next = wandb_poll("finished", t=clock.time(), steps=[4])
    fakes["slurm"].next = PollResult()  # Slurm forgot the job (MinJobAge): its word stands
    service.engine.poll("hero")
    assert fakes["wandb"].seen[-1] == {WB: {"step": 0}}
    with service.sessions() as s:
        run = s.get(Run, JOINED)
        assert run.state == RunState.FAILED and run.last_step == 107 and run.restarts == 0
        assert {r["source"] for r in run.stats["sources"]} == {"slurm", "wandb"}
    service.stop()
    assert t  # the clock moved
