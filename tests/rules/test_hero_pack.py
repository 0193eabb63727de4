"""The built-in hero pack: its own rule tests pass and cover every rule, and its policy holds."""

from __future__ import annotations

import re

import pytest
import yaml

from alerts.model import Severity
from monitor.rules.loader import apply_overrides, load_pack, pack_names, pack_test_file
from monitor.traces.rule_tests import run_file


def test_the_pack_tests_pass():
    path = pack_test_file("hero")
    assert path is not None and path.name == "hero_test.yaml"
    result = run_file(path)
    assert result.ok, "\n".join(f"{f.where} {f.test}\n{f.message}" for f in result.failures)
    assert result.tests >= 30


def test_every_rule_has_a_test_that_fires_it_and_one_that_keeps_it_quiet():
    doc = yaml.safe_load(pack_test_file("hero").read_text())
    fires, quiet = set(), set()
    for test in doc["tests"]:
        for check in test["alert_rule_test"]:
            (fires if check.get("exp_alerts") else quiet).add(check["alertname"])
    names = {r.name for r in load_pack("hero")}
    assert names - fires == set(), "rules no test fires"
    assert names - quiet == set(), "rules no test keeps quiet"


def test_the_test_file_is_not_a_pack():
    assert "hero" in pack_names() and "hero_test" not in pack_names()


def test_only_what_on_call_must_act_on_pages():
    by_severity = {s: {r.name for r in load_pack("hero") if r.severity is s} for s in Severity}
    assert by_severity[Severity.CRITICAL] == {
        "progress_stalled",
        "crash_loop",
        "run_crashed",
        "loss_nonfinite",
        "loss_spike",
        "loss_diverging",  # a slow divergence pages (issue 13)
        "run_finished_early",  # a clean exit before the target step pages (issue 13)
        "job_alert_error",  # the job itself says ERROR (issue 31, as wandb.alert)
    }
    blips = [r for r in load_pack("hero") if r.kind == "spike" and r.mode == "point"]
    assert {r.name for r in blips} == {"loss_jump", "grad_norm_spike"}
    assert all(r.severity is Severity.INFO for r in blips)


def test_every_rule_is_annotated_for_on_call():
    from monitor.web.dashboard.docs_pages import RUNBOOKS, slug

    sections = {slug(line[3:]) for line in RUNBOOKS.read_text().splitlines() if line.startswith("## ")}
    for r in load_pack("hero"):
        summary = r.annotations.get("summary", "")
        assert "{run}" in summary and "{reason}" in summary, r.name
        assert r.annotations.get("description"), r.name
        link = re.match(r"\{runbooks\}#([a-z-]+)$", r.annotations.get("runbook_url", ""))
        assert link and link.group(1) in sections, f"{r.name}: its runbook section exists"


def test_the_pack_thresholds_are_as_specified():
    rules = {r.name: r for r in load_pack("hero")}
    assert rules["telemetry_gone"].after == 600
    assert (rules["progress_stalled"].floor, rules["progress_stalled"].startup) == (900, 2700)
    assert rules["grad_norm_high"].above == 2.0
    skipped = rules["skipped_steps"]
    assert (skipped.increase, skipped.window, skipped.cumulative) == (3, 900, False)
    assert rules["moe_drop_high"].above == 0.07 and rules["router_entropy_low"].below == 5.92
    assert rules["mfu_low"].below == 15 and rules["mfu_low"].mode == "fraction"
    assert rules["tokens_per_second_low"].below is None  # off until set per run
    assert (rules["throughput_drop"].drop, rules["throughput_drop"].for_) == (0.1, 900)
    assert (rules["flops_drop"].drop, rules["flops_drop"].for_) == (0.1, 900)  # the same, in FLOP/s
    assert (rules["oom_kills"].increase, rules["oom_kills"].window) == (2, 6 * 3600)
    assert rules["loss_spike"].floor_window == 300 and rules["loss_spike"].min_rise == 0.05


@pytest.mark.parametrize(
    "name, patch",
    [
        ("telemetry_gone", {"after": "20m"}),
        ("progress_stalled", {"floor": "30m", "startup": "2h"}),
        ("loss_spike", {"z": 8, "min_rise": 0.1}),
        ("grad_norm_high", {"above": 5.0}),
        ("skipped_steps", {"increase": 10}),
        ("moe_drop_high", {"above": 0.1}),
        ("router_entropy_low", {"below": 5.5}),
        ("tokens_per_second_low", {"below": 350000}),
        ("mfu_low", {"below": 30}),
        ("throughput_drop", {"drop": 0.2, "for": "30m"}),
        ("eval_regressed", {"delta": 0.05}),
        ("oom_kills", {"increase": 5}),
        ("crash_loop", {"min_restarts": 5}),
        ("host_memory_low", {"below": 1e9}),
    ],
)
def test_every_threshold_can_be_overridden_per_run(name, patch):
    (original,) = [r for r in load_pack("hero") if r.name == name]
    (changed,) = [
        r for r in apply_overrides(load_pack("hero"), {name: patch}, "watch.rules") if r.name == name
    ]
    for key in patch:
        assert changed.raw()[key] != original.raw()[key], key
    assert {k: v for k, v in changed.raw().items() if k not in patch} == {
        k: v for k, v in original.raw().items() if k not in patch
    }
