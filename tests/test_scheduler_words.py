"""Slurm's own words on a run's end (#43): the page quotes them ("Slurm says OUT_OF_MEMORY"), and the
labels that say how a job is now (its state, reason, nodes) are not part of an alert's identity: a job
requeued onto other nodes keeps its open alerts, one incident, one page."""

from __future__ import annotations

from alerts.model import Finding
from monitor.engine.alert_naming import AlertNaming
from monitor.rules.loader import load_pack
from monitor.samples import scheduler_says


def test_the_schedulers_words():
    assert scheduler_says({"slurm_state": "FAILED", "slurm_reason": "NonZeroExitCode"}) == (
        "Slurm says FAILED: NonZeroExitCode"
    )
    assert scheduler_says({"slurm_state": "NODE_FAIL"}) == "Slurm says NODE_FAIL"
    assert scheduler_says({"slurm_state": "CANCELLED", "slurm_reason": "None"}) == "Slurm says CANCELLED"
    assert scheduler_says({"source": "wandb"}) == ""


def crashed_rule():
    return next(r for r in load_pack("hero") if r.name == "run_crashed")


def test_run_crashed_quotes_slurm_and_its_identity_ignores_how_the_job_is_now():
    labels = {
        "team": "a",
        "slurm_job": "7",
        "slurm_state": "OUT_OF_MEMORY",
        "slurm_reason": "OutOfMemory",
        "hosts": "node[01-04]",
    }
    naming = AlertNaming(lambda run: labels, lambda run: "hero-70b")
    rule, finding = crashed_rule(), Finding(True, reason="run failed at step 9: it exited with an error")
    summary = naming.annotations(rule, "slurm:c/7", finding)["summary"]
    assert summary == (
        "hero-70b: run failed at step 9: it exited with an error; Slurm says OUT_OF_MEMORY: OutOfMemory"
    )
    before = naming.key(rule, "slurm:c/7", finding)
    labels.update(slurm_state="RUNNING", slurm_reason="", hosts="node[09-12]")  # requeued elsewhere
    assert naming.key(rule, "slurm:c/7", finding).fingerprint == before.fingerprint
    assert before.labels["slurm_job"] == "7" and "hosts" not in before.labels
    # a run without a scheduler: the page says nothing of one
    plain = AlertNaming(lambda run: {"source": "wandb"}, lambda run: "r")
    assert plain.annotations(rule, "wandb:e/p/r", finding)["summary"] == f"r: {finding.reason}"
