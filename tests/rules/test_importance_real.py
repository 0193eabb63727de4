"""Issue 26 on the real llm.c log (../shared/data/real), replayed through the hero pack as live: a run
that logs no grad norm pages nobody; a loss under an unknown name is one warning naming the loss and the
keys the run logs; an eval-loss regression pages under Megatron-LM's and Hugging Face's names."""

from __future__ import annotations

import pytest

from monitor.traces.replay import replay
from tests.rules.helpers_rules import hero
from tests.rules.real_scenarios import HUGGINGFACE, MEGATRON, Scenario, as_trainer, renamed


def test_a_healthy_run_that_logs_no_grad_norm_pages_nobody():
    sc = Scenario()
    result = replay(renamed(sc.build(), {}, ("grad/",)), hero(), end=sc.end)
    assert [e for e in result.firing() if e.severity != "info"] == []
    (summary,) = result.summaries.values()
    states = {r.rule: r.state for r in summary.coverage.rules}
    assert states["grad_norm_high"] == "unused" and states["loss_spike"] == "covered"
    assert summary.blind is None


def test_a_loss_under_an_unknown_name_is_one_warning_naming_it_and_the_keys_logged():
    sc = Scenario(last_step=4000)
    samples = renamed(sc.build(), {"train/loss": "objective"}, ("grad/",))
    result = replay(samples, hero(), end=sc.end)
    (warning,) = [e for e in result.firing() if e.severity != "info"]
    assert warning.rule == "watching_blind" and warning.t - sc.step_at[0] < 10 * 60
    assert "no value of train/loss" in warning.summary
    assert "the run logs 'objective'" in warning.summary and "{objective: train/loss}" in warning.summary
    assert "grad/norm/total" not in warning.summary, "an optional input the run does not log is no page"


@pytest.mark.parametrize("names", [MEGATRON, HUGGINGFACE], ids=["megatron", "huggingface"])
def test_an_eval_loss_regression_pages_under_each_trainers_name(names):
    sc = Scenario(last_step=12000)
    base = sc.build()
    healthy = replay(as_trainer(sc, base, names), hero(), end=sc.end)
    assert [e for e in healthy.firing() if e.severity != "info"] == []
    worse = replay(as_trainer(sc, base, names, lambda s: 0.08 if s >= 10000 else 0.0), hero(), end=sc.end)
    (page,) = [e for e in worse.firing() if e.severity != "info"]
    assert page.rule == "eval_loss_regressed" and page.step == 10000
    assert page.t - sc.step_at[10000] < 15 * 60, "at the first eval after the regression"
