"""Issue 26's cases on the real llm.c log, for bench/detection_quality.py: a run that logs no grad norm,
a loss under an unknown name, an eval-loss regression under a trainer's own names, a slowdown seen both
on step times and on tokens/s."""

from __future__ import annotations

from collections.abc import Callable

from monitor.samples import Sample
from tests.rules.helpers_rules import T0
from tests.rules.real_scenarios import Scenario, as_trainer, renamed, step_change, with_tokens_per_second

HOUR = 3600.0


def no_grad_norm(**kw: object) -> Callable[[], tuple[list[Sample], float]]:
    def build() -> tuple[list[Sample], float]:
        sc = Scenario(**kw)
        return renamed(sc.build(), {}, ("grad/",)), sc.end

    return build


def eval_regression(names: dict[str, str]) -> Callable[[], tuple[list[Sample], float, float]]:
    """The run under a trainer's names with the real llm.c validation loss, 0.08 worse from step 10000."""

    def build() -> tuple[list[Sample], float, float]:
        sc = Scenario(last_step=12000)
        base = sc.build()
        worse = as_trainer(sc, base, names, lambda s: 0.08 if s >= 10000 else 0.0)
        return worse, sc.step_at[10000], sc.end

    return build


def unknown_loss_name() -> tuple[list[Sample], float, float]:
    sc = Scenario(last_step=4000)
    return renamed(sc.build(), {"train/loss": "objective"}, ("grad/",)), T0, sc.end


def slower_with_tokens() -> tuple[list[Sample], float, float]:
    sc = Scenario(slow=step_change(1.5 * HOUR, 1 / 0.85), save_every=None, eval_pause=None, last_step=5000)
    return with_tokens_per_second(sc.build()), T0 + 1.5 * HOUR, sc.end
