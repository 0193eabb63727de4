"""The rl and sft packs: their own rule tests pass and cover every rule both ways, every rule is
annotated with a runbook section that exists, and no default depends on a run's scale."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from monitor.profiles import CANONICAL
from monitor.rules.loader import load_pack, pack_names, pack_test_file
from monitor.traces.rule_tests import run_file

RUNBOOKS = Path(__file__).resolve().parents[2] / "monitor" / "web" / "dashboard" / "runbooks.md"


def anchors() -> set[str]:
    heads = re.findall(r"^## (.+)$", RUNBOOKS.read_text(), re.M)
    return {re.sub(r"[^a-z0-9 -]", "", h.lower()).replace(" ", "-") for h in heads}


@pytest.mark.parametrize("pack", ["rl", "sft"])
def test_the_pack_is_built_in_and_its_tests_pass(pack: str) -> None:
    assert pack in pack_names()
    result = run_file(pack_test_file(pack))
    assert result.ok, "\n".join(f"{f.where} {f.test}\n{f.message}" for f in result.failures)


@pytest.mark.parametrize("pack", ["rl", "sft"])
def test_every_rule_has_a_test_that_fires_it_and_one_that_keeps_it_quiet(pack: str) -> None:
    doc = yaml.safe_load(pack_test_file(pack).read_text())
    fires, quiet = set(), set()
    for test in doc["tests"]:
        for check in test["alert_rule_test"]:
            (fires if check.get("exp_alerts") else quiet).add(check["alertname"])
    names = {r.name for r in load_pack(pack)}
    assert names - fires == set() and names - quiet == set()


@pytest.mark.parametrize("pack", ["rl", "sft"])
def test_every_rule_is_annotated_and_its_runbook_section_exists(pack: str) -> None:
    have = anchors()
    for r in load_pack(pack):
        assert "{run}" in r.annotations["summary"] and "{reason}" in r.annotations["summary"], r.name
        assert r.annotations.get("description"), r.name
        anchor = r.annotations["runbook_url"].rsplit("#", 1)[1]
        assert anchor in have, (r.name, anchor)
        assert r.metric in CANONICAL, (r.name, r.metric)  # written in the profiles' vocabulary


def test_no_default_depends_on_the_runs_scale() -> None:
    """Fixed bounds only on shares (0..1); everything else is relative to the run's own baseline."""
    for r in [*load_pack("rl"), *load_pack("sft")]:
        if r.kind == "threshold":
            bound = r.above if r.above is not None else r.below
            assert r.metric.endswith("clip_ratio") and 0 < bound < 1, r.name
        if r.kind == "spike" and r.scale == "linear":
            assert r.min_rise == 0, r.name  # linear units are the run's: only sigmas and progress count
        if r.kind == "regression":
            assert r.relative, r.name
