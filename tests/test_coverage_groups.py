"""Rules that share their inputs (most do: the step clock, the state, the loss) are judged alike, each
under its own name, and the stored coverage keeps the shared inputs once: the same coverage as when
each rule's inputs were judged on their own (they are judged once a poll per distinct set)."""

from __future__ import annotations

from types import SimpleNamespace

from monitor.engine.arrivals import Arrivals
from monitor.engine.coverage import RunCoverage, judge
from monitor.engine.coverage_stored import expand, stored
from monitor.rules.base import STEP

T0 = 1_780_000_000.0


def spec(name: str, kind: str = "threshold", expect: str | None = None) -> SimpleNamespace:
    return SimpleNamespace(
        name=name,
        kind=kind,
        severity=SimpleNamespace(value="warning"),
        importance={"train/loss": "essential"},
        expect=expect,
        for_kind=None,
        for_=0.0,
    )


def test_rules_sharing_inputs_are_judged_alike_under_their_own_names():
    arrivals = Arrivals(frozenset({"train/loss", "grad/norm", "extra/m0"}))
    for i in range(40):  # the loss and steps come; the grad norm never does
        arrivals.observe(T0 + 10 * i, ("train/loss",), i, None)
    rules = [
        (spec("loss_spike", "spike"), frozenset({"train/loss"})),
        (spec("loss_high"), frozenset({"train/loss"})),
        (spec("grad_high", expect="always"), frozenset({"grad/norm"})),
        (spec("both"), frozenset({"train/loss", "grad/norm"})),
        (spec("grad_too", expect="always"), frozenset({"grad/norm"})),
        (spec("optional"), frozenset({"extra/m0"})),
        (spec("optional_and_loss"), frozenset({"extra/m0", "train/loss"})),
    ]
    cov = judge("r", rules, arrivals, T0 + 400, promised=frozenset({STEP}), plans={})
    states = {r.rule: (r.kind, r.state, [(i.name, i.state) for i in r.inputs]) for r in cov.rules}
    assert states == {
        "loss_spike": ("spike", "covered", [("train/loss", "covered")]),
        "loss_high": ("threshold", "covered", [("train/loss", "covered")]),
        "grad_high": ("threshold", "blind", [("grad/norm", "blind")]),
        "both": ("threshold", "covered", [("grad/norm", "unused"), ("train/loss", "covered")]),
        "grad_too": ("threshold", "blind", [("grad/norm", "blind")]),
        "optional": ("threshold", "unused", [("extra/m0", "unused")]),
        # an unused optional input beside a covered one: covered
        "optional_and_loss": ("threshold", "covered", [("extra/m0", "unused"), ("train/loss", "covered")]),
    }
    assert cov.state == "blind"
    back = expand({**stored(cov), "summary": None, "gaps": {}, "keys": []})
    assert [(r["rule"], r["state"], [i["name"] for i in r["inputs"]]) for r in back["rules"]] == [
        (r.rule, r.state, [i.name for i in r.inputs]) for r in cov.rules
    ]
    # train/loss, grad/norm (expected always, and optional), extra/m0: once each
    assert len(stored(cov)["inputs"]) == 4


def test_the_stored_form_from_the_plan_is_the_walk_over_the_rules_and_reads_back_their_states():
    """``stored`` writes a judged coverage from its plan (the rule table once per plan, a string): the same
    as walking its rules, and each rule's state reads back from its inputs."""
    arrivals = Arrivals(frozenset({"train/loss", "grad/norm", "extra/m0"}))
    for i in range(40):
        arrivals.observe(T0 + 10 * i, ("train/loss",), i, None)
    rules = [
        (spec("loss_spike", "spike"), frozenset({"train/loss"})),
        (spec("grad_high", expect="always"), frozenset({"grad/norm"})),
        (spec("both"), frozenset({"train/loss", "grad/norm"})),
        (spec("optional"), frozenset({"extra/m0"})),
        (spec("optional_and_loss"), frozenset({"extra/m0", "train/loss"})),
    ]
    plans: dict = {}
    for now in (T0 + 400, T0 + 500):  # the second poll reuses the plan and its rule table
        cov = judge("r", rules, arrivals, now, promised=frozenset({STEP}), plans=plans)
        fast = stored(cov)
        walked = stored(RunCoverage(cov.run, cov.now, cov.state, cov.rules))
        assert fast == walked and isinstance(fast["table"], str) and "rules" not in fast and fast["v"] == 3
        back = expand({**fast, "summary": None, "gaps": {}, "keys": []})
        assert [
            (r["rule"], r["kind"], r["state"], [i["name"] for i in r["inputs"]]) for r in back["rules"]
        ] == [(r.rule, r.kind, r.state, [i.name for i in r.inputs]) for r in cov.rules]
    # a name that does not fit the string: the rules are stored as lists, with their states
    odd = [(spec("loss spike"), frozenset({"train/loss"}))]
    cov = judge("r", odd, arrivals, T0 + 400, promised=frozenset({STEP}), plans={})
    kept = stored(cov)
    assert kept["v"] == 2 and kept["rules"] == [["loss spike", "threshold", "warning", "covered", [0]]]
    assert expand(kept)["rules"][0]["state"] == "covered"
