"""``loss_spike`` on a slow run whose loss goes up and stays up near the bar: one incident, one page.

At 100 s a step the baseline holds a few dozen values and its noise estimate moves with every few of
them. The loss, 0.5 above its course from step 700 on (the real llm.c log, falling by itself), came
back under the bar it fired at, the floor came down, the statistics thawed with a lower bar, and two
steps later the same incident paged again. Once down, the floor is raised again only above the bar it
came down under until ``min_points`` new values entered the baseline."""

from __future__ import annotations

import pytest

from monitor.rules.loader import load_pack
from monitor.traces.replay import replay
from tests.rules.helpers_rules import hero
from tests.rules.real_scenarios import Scenario
from tests.rules.test_replay_batched import plain
from tests.rules.test_snapshot_old_windows import goes_on_alike

SAVES = {"save_every": 50, "save_pause": 600.0, "eval_every": 200, "eval_pause": 900.0}


def loss_pages(sc: Scenario) -> list:
    return [e for e in replay(sc.build(), hero(), end=None).firing() if e.rule == "loss_spike"]


@pytest.mark.parametrize("step_time", [100.0, 20.0])
def test_a_loss_that_goes_up_and_stays_near_the_bar_pages_once(step_time):
    kw = {"step_time": step_time, **SAVES}
    shifted = Scenario(last_step=1000, loss_shift=lambda s: 0.5 if s >= 700 else 0.0, **kw)
    pages = loss_pages(shifted)
    assert [p.step for p in pages] == [702], [(p.step, p.reason) for p in pages]
    assert (pages[0].t - shifted.step_at[700]) / 60 < 15  # the save at 700 and two steps
    assert loss_pages(Scenario(last_step=1400, end_state="finished", **kw)) == []


def test_a_spike_after_the_hold_still_pages():
    # a second, larger incident later in the run is news: the held bar does not hide it
    kw = {"step_time": 100.0, **SAVES}
    twice = Scenario(
        last_step=1300, loss_shift=lambda s: 1.0 if 700 <= s < 760 or 1100 <= s < 1160 else 0.0, **kw
    )
    assert [p.step for p in loss_pages(twice)] == [702, 1102]


def test_a_snapshot_written_before_the_rearm_bar_reads_back_and_goes_on_alike():
    spec = {r.name: r for r in load_pack("hero")}["loss_spike"]
    sc = Scenario(last_step=1000, loss_shift=lambda s: 0.5 if s >= 700 else 0.0, step_time=100.0, **SAVES)
    samples = plain(sc.build())
    cut = next(i for i, s in enumerate(samples) if s.step is not None and s.step >= 600)

    def before(det, attrs) -> int:  # noqa: ANN001
        base = attrs["baseline"]["a"]
        return int(base.pop("_rearm", None) is not None) + int(base.pop("_rearm_left", None) is not None)

    goes_on_alike(spec, samples, cut, before, fires=True)
