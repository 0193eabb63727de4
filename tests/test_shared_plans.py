"""What the runs of a watch share (coverage plans, a watch's promised inputs) is never taken from a
config loaded before: a reloaded rule that now expects an input makes a run that never sends it
blind, and the old rules' runs still judge it by the old rules."""

from __future__ import annotations

from monitor.config.loader import parse_config
from monitor.engine.blind_watch import BlindWatch
from monitor.engine.evaluator import Evaluator
from monitor.profiles import Vocabulary
from monitor.samples import Sample
from tests.rules.helpers_rules import T0, rule, steps

STEPPED = frozenset({"@step", "@state"})


def _fed(ev: Evaluator, run: str) -> None:
    for s in steps([2.0] * 300, metric="train/loss", every=10, run=run):
        ev.observe(Sample(s.t, s.run, s.step, s.metrics, s.state, "sim"))


def test_a_reloaded_rule_that_expects_an_input_makes_the_run_blind_and_the_old_one_does_not():
    old = [rule(name="gnorm_high", kind="threshold", metric="train/grad_norm", above=10.0)]
    new = [rule(name="gnorm_high", kind="threshold", metric="train/grad_norm", above=10.0, expect="always")]
    before, after = Evaluator(lambda run: old), Evaluator(lambda run: new)
    for ev in (before, after):
        for run in ("a", "b"):
            _fed(ev, run)  # the runs log their loss for 50 minutes, never a grad norm
    now = T0 + 3000
    for run in ("a", "b"):
        assert before.coverage(run, now, promised=STEPPED).input("train/grad_norm").state == "unused"
        got = after.coverage(run, now, promised=STEPPED).input("train/grad_norm")
        assert got.state == "blind" and "never arrived" in got.why
    # the runs of one rule set share one plan cache, not one a run (memory at 10,000 runs)
    assert after._run("a").coverage_plans is after._run("b").coverage_plans
    assert after._run("a").coverage_plans is not before._run("a").coverage_plans


def test_a_watch_loaded_again_with_other_queries_is_judged_by_what_it_queries_now():
    def watch(aliases: str):  # noqa: ANN202
        cfg = parse_config(
            "watch:\n  - name: team\n    poll_interval: 60s\n"
            f"    prometheus: {{url: 'http://p:9090', queries: {{{aliases}}}}}\n"
            "receivers: [{name: quiet, kind: dashboard}]\nroute: {receiver: quiet}\n"
        )
        return cfg.watch[0]

    blind = BlindWatch(Evaluator(lambda run: []), Vocabulary())
    first, second = watch("lost_nodes: 'sum(x)'"), watch("lost_links: 'sum(y)'")
    assert "lost_nodes" in blind.promised(first) and "lost_links" not in blind.promised(first)
    assert "lost_links" in blind.promised(second) and "lost_nodes" not in blind.promised(second)
