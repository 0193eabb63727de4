"""How good is detection? Incidents built on real training logs (../shared/data/real, its README says
where they come from), replayed through the hero pack on its default settings (a row that differs says
which setting and why), through the same Evaluator as the live engine (monitor/traces/replay.py).

For each incident: the rule that should catch it, the time from the onset to its first firing, the
budget on-call needs for its type (``BUDGETS``: one table, independent of the rules' constants) and the
ratio; the pages since the onset (one incident should be one page) and before it (``early``: false
pages, counted in every run). Then the healthy logs: every page they raise is false. Then the same
incidents at hero cadence (bench/detection_cadence.py: 1 s, 20 s and 100 s a step).

Run:  .venv/bin/python bench/detection_quality.py          (about 40 s)
"""

from __future__ import annotations

import math
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.detection_cadence import main as cadence_main  # noqa: E402
from bench.detection_real_runs import bloom_blocks, pai_runs  # noqa: E402
from monitor.rules.loader import RuleSet  # noqa: E402
from monitor.rules.spec import RuleSpec  # noqa: E402
from monitor.samples import Sample  # noqa: E402
from monitor.traces.replay import replay  # noqa: E402
from tests.rules.helpers_rules import T0, hero, llmc_samples  # noqa: E402
from tests.rules.real_cases import (  # noqa: E402
    eval_regression,
    no_grad_norm,
    slower_with_tokens,
    unknown_loss_name,
)
from tests.rules.real_scenarios import HUGGINGFACE, MEGATRON, Scenario, as_trainer, step_change  # noqa: E402
from tests.rules.test_replay_flaky_outage import wandb_outage  # noqa: E402
from tests.rules.test_rule_real_data import bloom_samples  # noqa: E402

MIN = 60.0
HOUR = 3600.0

# What on-call needs per incident type (issue 39's targets), never a rule's own factor or grace.
BUDGETS = {
    "hang": 15 * MIN,  # after the step (or the usual pause) that did not end
    "slowdown": HOUR,  # a 4-15% slowdown that stays
    "divergence": 30 * MIN,  # loss rising or a raised floor
    "nan": MIN,
    "crash": 5 * MIN,  # a crash or a clean exit before the target
    "crash_loop": HOUR,
    "oom": 5 * MIN,
    "blind": 15 * MIN,  # an essential input never arriving
    "eval": 30 * MIN,  # an eval regression, after the eval that shows it
    "event": 5 * MIN,  # recorded events (info), not pages
}


@dataclass
class Incident:
    name: str
    rules: tuple[str, ...]  # any of these firing catches it
    limit: float  # seconds: the target (or the rule's own definition)
    build: Callable[[], tuple[list[Sample], float, float | None]]  # samples, onset, end of replay
    specs: Callable[[], list[RuleSpec]] = hero
    differs: str = ""  # a setting that is not the default, and why (shown in the table)


def scenario(sc: Scenario, onset: Callable[[Scenario], float]) -> tuple[list[Sample], float, float]:
    samples = sc.build()
    return samples, onset(sc), sc.end


def oom_samples(times: list[float], until: float) -> list[Sample]:
    """A Prometheus-like OOM kill counter scraped every minute, rising at ``times``."""
    out, t = [], T0
    while t <= until:
        out.append(Sample(t, "llmc-hero", metrics={"oom_kills_total": float(sum(k <= t for k in times))}))
        t += MIN
    return out


def nan_at(step: int) -> Callable[[int], float]:
    return lambda s: math.nan if s == step else 0.0


def incidents() -> list[Incident]:
    save = Scenario(last_step=12000)
    save.build()
    usual_save = statistics.median(p[1] for s, p in save.pauses.items() if s % 1000 == 0)
    oom_crash = Scenario(last_step=9000, end_state="crashed", watch_after=30 * MIN)
    oom_crash.build()
    crash_at = oom_crash.last_t + oom_crash.end_after
    oom_crash.extra = oom_samples([crash_at - 90], crash_at + 30 * MIN)
    ooms = Scenario(last_step=16000)
    ooms.build()
    kills = [ooms.step_at[10000], ooms.step_at[13000]]
    ooms.extra = oom_samples(kills, ooms.last_t)
    target = RuleSet(tuple(hero())).for_run(settings={"target_step": 19559})
    return [
        Incident(
            "hang at an ordinary step (step 9876)",
            ("progress_stalled",),
            BUDGETS["hang"],
            lambda: scenario(Scenario(hang_after_step=9876, watch_after=HOUR), lambda s: s.last_t),
        ),
        Incident(
            "a save that never finishes (step 12000)",
            ("progress_stalled",),
            usual_save + BUDGETS["hang"],
            lambda: scenario(Scenario(hang_after_step=12000, watch_after=HOUR), lambda s: s.last_t),
        ),
        Incident(
            "third restore hangs (two took ~22m)",
            ("progress_stalled",),
            22 * MIN + BUDGETS["hang"],  # after the usual restore would have ended
            lambda: scenario(
                Scenario(restarts=[(4500, 22 * MIN), (8300, 21 * MIN), (12200, None)], watch_after=3 * HOUR),
                lambda s: s.restarted_at[-1],
            ),
        ),
        Incident(
            "4% slower steps from 3h (one slow host)",
            ("throughput_slowdown",),
            BUDGETS["slowdown"],
            lambda: scenario(Scenario(slow=step_change(3 * HOUR, 1 / 0.96)), lambda s: T0 + 3 * HOUR),
        ),
        Incident(
            "loss +0.5 over 2,000 steps from step 10000",
            ("loss_diverging", "loss_spike"),
            BUDGETS["divergence"],
            lambda: scenario(
                Scenario(loss_shift=lambda s: 0.5 * (s - 10000) / 2000 if s >= 10000 else 0.0),
                lambda s: s.step_at[10000],
            ),
        ),
        Incident(
            "loss floor raised by 0.3 from step 10000",
            ("loss_spike",),
            BUDGETS["divergence"],
            lambda: scenario(
                Scenario(loss_shift=lambda s: 0.3 if s >= 10000 else 0.0), lambda s: s.step_at[10000]
            ),
        ),
        Incident(
            "NaN loss at step 7000",
            ("loss_nonfinite",),
            BUDGETS["nan"],
            lambda: scenario(Scenario(loss_shift=nan_at(7000), last_step=8000), lambda s: s.step_at[7000]),
        ),
        Incident(
            "finished at step 12000 of 19559",
            ("run_finished_early",),
            BUDGETS["crash"],
            lambda: scenario(
                Scenario(last_step=12000, end_state="finished", watch_after=30 * MIN),
                lambda s: s.last_t + s.end_after,
            ),
            specs=lambda: target,
        ),
        Incident(
            "crashed after an OOM kill",
            ("run_crashed",),
            BUDGETS["crash"],
            lambda: (oom_crash.build(), crash_at, oom_crash.end),
        ),
        Incident(
            "crash loop (dies at 4500, then 4300 thrice)",
            ("crash_loop",),
            BUDGETS["crash_loop"],
            lambda: scenario(
                Scenario(
                    restarts=[(4500, 10 * MIN), (4300, 10 * MIN), (4300, 10 * MIN), (4300, 10 * MIN)],
                    last_step=6000,
                ),
                lambda s: s.restarted_at[0],
            ),
        ),
        Incident(
            "two OOM kills in 6h",
            ("oom_kills",),
            BUDGETS["oom"],
            lambda: (ooms.build(), kills[1], ooms.end),
        ),
        Incident(
            "BLOOM-176B loss blip at 31219 (real; info)",
            ("loss_jump",),
            BUDGETS["event"],
            lambda: (bloom_samples(), next(s.t for s in bloom_samples() if s.step == 31219), None),
            specs=lambda: RuleSet(tuple(hero())).for_run(
                {"loss_jump": {"min_points": 3}, "loss_spike": {"min_points": 3}}
            ),
            differs="min_points 3 (default 8): the excerpt has 10 lines before the blip",
        ),
        Incident(
            "15% slower from 1.5h, tokens/s logged",
            ("throughput_slowdown", "throughput_drop"),
            BUDGETS["slowdown"],
            slower_with_tokens,
        ),
        Incident(
            "loss logged as 'objective', no grad norm",
            ("watching_blind",),
            BUDGETS["blind"],
            unknown_loss_name,
        ),
        Incident(
            "eval loss +0.08 from step 10000 (Megatron)",
            ("eval_loss_regressed",),
            BUDGETS["eval"],
            eval_regression(MEGATRON),
        ),
        Incident(
            "eval loss +0.08 from step 10000 (HF Trainer)",
            ("eval_loss_regressed",),
            BUDGETS["eval"],
            eval_regression(HUGGINGFACE),
        ),
        Incident(
            "PAI straggler (worker 6, real)",
            ("throughput_slowdown", "throughput_drop"),
            BUDGETS["slowdown"],
            lambda: pai_runs(straggler=True),
        ),
    ]


def steady_and_ending_incidents() -> list[Incident]:
    """Issue 26 (points 2, 3, 4): a hang in a run that never pauses, a trace whose last line is W&B's
    ``crashed``, a hang during a flaky W&B outage."""

    def crashed_last() -> tuple[list[Sample], float, None]:
        samples = Scenario(last_step=9000, end_state="crashed").build()
        return samples, samples[-1].t, None  # nothing after the crash: replay runs the clock on

    def hang_in_outage() -> tuple[list[Sample], float, None]:
        trace, _, _ = wandb_outage("at once", hang=True)
        return trace, max(s.t for s in trace if s.step is not None), None

    return [
        Incident(
            "hang in a run that never pauses (step 9876)",
            ("progress_stalled",),
            BUDGETS["hang"],
            lambda: scenario(
                Scenario(save_every=None, eval_pause=None, hang_after_step=9876, watch_after=HOUR),
                lambda s: s.last_t,
            ),
        ),
        Incident("trace ends in W&B 'crashed'", ("run_crashed",), BUDGETS["crash"], crashed_last),
        Incident(  # herowatch cannot see during the 40-minute outage: the budget starts after it
            "hang during a flaky 40m W&B outage",
            ("progress_stalled",),
            40 * MIN + BUDGETS["hang"],
            hang_in_outage,
        ),
    ]


def flaky_outages() -> list[tuple[str, Callable[[], tuple[list[Sample], float | None]]]]:
    """Issue 26 (point 4): healthy runs behind flaky 40-minute outages (one source_unavailable warning
    each, no page)."""
    return [
        ("llm.c behind a flaky W&B outage, backlog at once", lambda: (wandb_outage("at once")[0], None)),
        ("llm.c behind a flaky W&B outage, backlog in order", lambda: (wandb_outage("in order")[0], None)),
    ]


def healthy() -> list[tuple[str, Callable[[], tuple[list[Sample], float | None]]]]:
    def sc(**kw: object) -> Callable[[], tuple[list[Sample], float]]:
        def build() -> tuple[list[Sample], float]:
            s = Scenario(**kw)
            return s.build(), s.end

        return build

    return [
        ("llm.c, 1 s steps, no pauses", lambda: (llmc_samples(every=1.0), None)),
        ("llm.c, 1.7 s, saves + evals, PAI jitter", sc()),
        ("... logged every 10 steps", sc(log_every=10)),
        ("... saves every 15m of wall time", sc(save_every=None, save_every_s=900)),
        ("... 4-minute evals", sc(eval_pause=240)),
        ("... 10 s steps (54 h)", sc(step_time=10.0)),
        ("... PAI jitter 10x slower", sc(jitter_hold=10)),
        (
            "... +/-2% speed swing, 4 h cycle",
            sc(slow=lambda x: 1 + 0.02 * math.sin(2 * math.pi * x / (4 * HOUR))),
        ),
        ("... finished at its target step", sc(end_state="finished", watch_after=30 * MIN)),
        ("... no grad norm logged", no_grad_norm()),
        ("... no grad norm, logged every 10 steps", no_grad_norm(log_every=10)),
        (
            "... Megatron names, with its eval loss",
            lambda: (lambda s: (as_trainer(s, s.build(), MEGATRON), s.end))(Scenario()),
        ),
        ("BLOOM-176B excerpts (each its own run)", lambda: (bloom_blocks(), None)),
        ("PAI job, 9 healthy workers", lambda: (pai_runs(straggler=False)[0], None)),
    ]


def main() -> None:
    started = time.perf_counter()
    print(
        f"{'incident (on real logs)':<46} {'caught by':<20} {'detected':>9} {'limit':>8} {'ratio':>6} "
        f"{'pages':>5} {'early':>5}"
    )
    delays: list[float] = []
    caught = total = false_before = extra = 0
    notes: list[str] = []
    for inc in incidents() + steady_and_ending_incidents():
        samples, onset, end = inc.build()
        result = replay(samples, inc.specs(), end=end)
        hits = [e for e in result.firing() if e.rule in inc.rules and e.t >= onset]
        pages = sum(1 for e in result.pages() if e.t >= onset)  # notifying messages since the onset
        early = sum(1 for e in result.pages() if e.t < onset)  # a page before the onset is false
        false_before += early
        extra += max(0, pages - 1)
        if inc.differs:
            notes.append(f"  {inc.name}: {inc.differs}")
        total += 1
        if hits:
            caught += 1
            delay = hits[0].t - onset
            delays.append(delay)
            took, limit = delay / MIN, inc.limit / MIN
            print(
                f"{inc.name:<46} {hits[0].rule:<20} {took:8.1f}m {limit:7.1f}m {took / limit:6.2f} {pages:5d}"
                f" {early:5d}"
            )
        else:
            print(
                f"{inc.name:<46} {inc.rules[0]:<20} {'missed':>9} {inc.limit / MIN:7.1f}m {'-':>6} {pages:5d}"
                f" {early:5d}"
            )
    print("\n".join(["settings that differ from the defaults:", *notes]) if notes else "")
    print(f"{'healthy log (real)':<46} {'pages':>5} {'warnings':>9}")
    false_pages = 0
    specs = RuleSet(tuple(hero())).for_run(settings={"target_step": 19559})
    for name, build in healthy() + flaky_outages():
        samples, end = build()
        result = replay(samples, specs, end=end)
        pages = result.firing("critical")
        warnings = result.firing("warning")
        false_pages += len(result.pages())  # every notifying message of a healthy run is a false page
        what = ", ".join(sorted({e.rule for e in pages + warnings}))
        print(f"{name:<46} {len(pages):5d} {len(warnings):9d}  {what}")
    median = statistics.median(delays) / MIN if delays else math.nan
    print(f"\n({time.perf_counter() - started:.0f} s)")
    print(
        f"caught {caught}/{total}, false pages {false_pages} on healthy logs + {false_before} before an "
        f"onset, extra pages {extra}, median time to detect {median:.1f} min"
    )
    cadence_main()


if __name__ == "__main__":
    main()
