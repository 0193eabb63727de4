"""The Evaluator: the lifecycle with injected time, restored alerts, and its event-driven fast path
giving exactly what evaluating every rule at every tick gives."""

from __future__ import annotations

import math

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from alerts.lifecycle import AlertStatus, advance
from alerts.model import AlertState, Finding
from monitor.engine.blindness import blind_rule
from monitor.engine.evaluator import Evaluator
from monitor.rules.kinds import DETECTORS
from monitor.samples import Sample, clean
from monitor.traces.replay import Replayer
from tests.rules.helpers_rules import T0, hero, rule, steps

MIN = 60.0


def events_of(ev: Evaluator, run: str, now: float) -> list[tuple[float, str, str, str]]:
    return [
        (e.transition.at, e.key.rule.name, e.transition.from_state.value, e.transition.to_state.value)
        for e in ev.evaluate(run, now)
    ]


def test_pending_firing_resolved_with_for_and_keep_firing_for():
    spec = rule(name="hot", kind="threshold", metric="m", above=1.0, **{"for": "2m"}, keep_firing_for="90s")
    ev = Evaluator(lambda run: [spec])
    out = []
    for i, v in enumerate([0.0, 2.0, 2.0, 2.0, 2.0, 0.0, 0.0, 0.0]):
        t = T0 + i * MIN
        ev.observe(Sample(t, "r", i, {"m": v}))
        out += events_of(ev, "r", t)
    assert out == [
        (T0 + 1 * MIN, "hot", "inactive", "pending"),
        (T0 + 3 * MIN, "hot", "pending", "firing"),
        (T0 + 6 * MIN, "hot", "firing", "resolved"),  # last true at 4m, kept firing for 90s
    ]
    assert ev.open_alerts() == []


def test_a_pending_alert_that_clears_goes_back_to_inactive():
    spec = rule(name="hot", kind="threshold", metric="m", above=1.0, **{"for": "5m"})
    ev = Evaluator(lambda run: [spec])
    out = []
    for i, v in enumerate([2.0, 2.0, 0.0]):
        ev.observe(Sample(T0 + i * MIN, "r", i, {"m": v}))
        out += events_of(ev, "r", T0 + i * MIN)
    assert [x[2:] for x in out] == [("inactive", "pending"), ("pending", "inactive")]


def test_a_restored_alert_is_resolved_when_its_condition_is_false():
    spec = rule(name="crashed", kind="state", severity="critical")
    ev = Evaluator(lambda run: [spec])
    key = ev.key(spec, "r")
    ev.restore(
        "r", "crashed", key.labels, AlertStatus(AlertState.FIRING, T0, fired_at=T0, last_true_at=T0), 7
    )
    assert events_of(ev, "r", T0 + 30) == [], "restored without its state: no evidence that it ended"
    ev.observe(Sample(T0 + 60, "r", 10, state="running"))
    [event] = ev.evaluate("r", T0 + 60)
    assert (event.transition.to_state.value, event.ref) == ("resolved", 7)
    assert not ev.is_open(key.fingerprint)


def test_an_alert_taken_out_from_outside_is_forgotten():
    spec = rule(name="crashed", kind="state", severity="critical")
    ev = Evaluator(lambda run: [spec])
    ev.observe(Sample(T0, "r", state="crashed"))
    assert [x[3] for x in events_of(ev, "r", T0)] == ["firing"]
    ev.drop("r")  # e.g. the watch was handed to another replica
    assert ev.alerts("r") == []
    ev.observe(Sample(T0 + 60, "r", state="running"))
    assert events_of(ev, "r", T0 + 60) == []


def test_when_run_labels_change_the_old_instance_resolves():
    labels = {"team": "a"}
    spec = rule(name="crashed", kind="state", severity="critical")
    ev = Evaluator(lambda run: [spec], lambda run: dict(labels))
    ev.observe(Sample(T0, "r", state="crashed"))
    first = ev.evaluate("r", T0)
    labels["team"] = "b"
    ev.observe(Sample(T0 + 60, "r", state="crashed"))
    changed = ev.evaluate("r", T0 + 60)
    ev.observe(Sample(T0 + 120, "r", metrics={"x": 1.0}))  # any sample: the rule is live, so evaluated
    changed += ev.evaluate("r", T0 + 120)
    assert first[0].key.labels["team"] == "a"
    assert {(e.key.labels["team"], e.transition.to_state.value) for e in changed} >= {
        ("a", "resolved"),
        ("b", "firing"),
    }


def test_stats_and_spike_score_for_the_dashboard():
    ev = Evaluator(lambda run: hero())
    for s in steps([2.0] * 100 + [5.0], every=10.0):
        ev.observe(s)
    stats = ev.stats("r")
    assert stats["loss_jump"]["spikes"] == 1 and stats["loss_jump"]["last_spike_step"] == 100
    assert ev.spike_score("r") >= 6


# ---- the fast path against the plain definition ------------------------------------------------
class NaiveEvaluator:
    """Every rule's own detector (nothing shared), fed every sample, evaluated at every tick."""

    def __init__(self, rules):
        self.rules = rules
        self.dets: dict[str, list] = {}
        self.active: dict[str, AlertStatus] = {}
        self.keys = Evaluator(lambda run: rules)
        self.state: dict[str, str] = {}

    def observe(self, sample):
        dets = self.dets.setdefault(sample.run, [DETECTORS[r.kind](r, sample.run) for r in self.rules])
        for d in dets:
            d.observe(sample)
        if sample.state is not None:
            self.state[sample.run] = sample.state

    def evaluate(self, run, now):
        out = []
        for spec, d in zip(self.rules, self.dets.get(run, []), strict=True):
            finding = d.evaluate(now)
            if self.state.get(run) == "finished" and not d.about_the_end:
                finding = Finding(False, reason="the run finished")  # its metrics' conditions are over too
            fp = self.keys.key(spec, run, finding).fingerprint
            status, tr = advance(self.active.get(fp), finding, now, spec.for_, spec.keep_firing_for)
            if status is not None and status.state.active:
                self.active[fp] = status
            else:
                self.active.pop(fp, None)
            if tr is not None:
                out.append((now, spec.name, tr.from_state.value, tr.to_state.value))
        return out


op = st.one_of(
    st.tuples(st.just("step"), st.floats(1, 60), st.floats(0.5, 3.0)),
    st.tuples(st.just("gap"), st.floats(60, 3600), st.just(0.0)),
    st.tuples(st.just("rewind"), st.integers(1, 50), st.just(0.0)),
    st.tuples(st.just("nan"), st.floats(1, 60), st.just(0.0)),
    st.tuples(
        st.just("state"), st.sampled_from(["running", "crashed", "finished", "preempted"]), st.just(0.0)
    ),
    st.tuples(st.just("oom"), st.floats(1, 600), st.just(0.0)),
    st.tuples(st.just("slow"), st.floats(1, 60), st.floats(0.1, 1.0)),
)


def build(ops) -> list[Sample]:
    t, step, ooms, out = T0, 0, 0.0, []
    for kind, a, b in ops:
        if kind in ("step", "nan", "slow"):
            t += a
            step += 1
            loss = math.nan if kind == "nan" else 2.0 * b
            speed = b if kind == "slow" else 1.0
            out.append(
                Sample(
                    t,
                    "r",
                    step,
                    {
                        "train/loss": loss,
                        "grad/norm/total": 0.3 * b,
                        "throughput/tokens_per_second": 4e5 * speed,
                        "throughput/mfu": 40 * speed,
                        "optim/skipped_step": float(b > 2.5),
                    },
                )
            )
        elif kind == "gap":
            t += a
        elif kind == "rewind":
            step = max(0, step - int(a))
        elif kind == "state":
            out.append(Sample(t, "r", state=a))
        else:
            ooms += 1
            t += a
            out.append(Sample(t, "r", metrics={"oom_kills_total": ooms}))
    return out


def ticks(samples, interval=15.0):
    """Sample times and the grid between them, as the replay clock runs."""
    times = sorted({s.t for s in samples})
    out, i = [], 0
    for a, b in zip(times, times[1:] + [times[-1] + 3600], strict=True):
        out.append(a)
        k = math.floor(a / interval) + 1
        while k * interval < b:
            out.append(k * interval)
            k += 1
        i += 1
    out.append(times[-1] + 3600)  # the replay's clock runs on to the end, inclusive
    return out


BLIND_AFTER_A_GAP = [
    ("gap", 569.5245954667774, 0.0),
    ("gap", 573.6952388282214, 0.0),
    ("oom", 543.5851214063994, 0.0),
    ("oom", 309.0192905520561, 0.0),
    ("nan", 10.656333937608498, 0.0),
    ("oom", 215.26931855219357, 0.0),
    ("nan", 10.5, 0.0),
    ("rewind", 35, 0.0),
    ("oom", 8.0, 0.0),
    ("nan", 8.526297089247866, 0.0),
    ("slow", 38.100791468261924, 0.8701012145085758),
    ("gap", 3162.895666210756, 0.0),
    ("slow", 5.707543028472679, 0.9373149571213883),
    ("gap", 2627.6431236694943, 0.0),
    ("nan", 1.4, 0.0),
    ("oom", 123.57056679546349, 0.0),
    ("step", 8.270017345528373, 2.9003155753209313),
    ("nan", 24.76762725178882, 0.0),
    ("oom", 561.5149056712519, 0.0),
    ("step", 9.47651730183178, 2.8273882158680443),
]  # found by Hypothesis: coverage goes blind in the long gap


@given(st.lists(op, min_size=5, max_size=80))
@example(BLIND_AFTER_A_GAP)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_the_fast_path_gives_what_evaluating_everything_always_gives(ops):
    samples = build(ops)
    if not samples:
        return
    rules = hero(
        tokens_per_second_low={"below": 3e5}, loss_spike={"min_points": 3}, loss_jump={"min_points": 3}
    )
    naive = NaiveEvaluator(rules)
    expected, i = [], 0
    for now in ticks(samples):
        while i < len(samples) and samples[i].t <= now:
            naive.observe(samples[i])
            i += 1
        expected += naive.evaluate("r", now)
    replayer = Replayer(rules, 15.0)
    replayer.feed_all(samples)
    # The reference runs the pack's detectors only; the replay also judges coverage (watching_blind,
    # as the live engine does after a poll: tests/test_coverage_engine.py), which it has no model of.
    events = replayer.finish(samples[-1].t + 3600)
    got = [(e.t, e.rule, None, e.state) for e in events if e.rule != blind_rule().name]
    want = [(t, r, None, "inactive" if to == "inactive" else to) for t, r, _, to in expected]
    assert sorted(got, key=lambda x: (x[0], x[1])) == sorted(want, key=lambda x: (x[0], x[1]))


def test_a_firing_counter_alert_survives_a_restart_through_the_snapshot():
    spec = rule(name="ooms", kind="counter_increase", metric="oom_kills_total", increase=1, window="6h")
    ev = Evaluator(lambda run: [spec])
    for i, v in enumerate([0.0, 0.0, 1.0, 2.0]):
        ev.observe(Sample(T0 + i * MIN, "r", metrics={"oom_kills_total": v}, source="prometheus"))
    [fired] = ev.evaluate("r", T0 + 3 * MIN)
    state = ev.export_state("r")
    # a new process: the snapshot and the open alert from storage, then more of the same counter
    again = Evaluator(lambda run: [spec])
    assert again.import_state("r", state) == 1
    again.restore("r", "ooms", fired.key.labels, fired.status, 1)
    again.observe(Sample(T0 + 10 * MIN, "r", metrics={"oom_kills_total": 2.0}, source="prometheus"))
    assert again.evaluate("r", T0 + 10 * MIN) == [], "still within the 6h window: it keeps firing"
    assert [a.status.state.value for a in again.open_alerts("r")] == ["firing"]
    # without the snapshot the detector cannot tell, and it must not resolve either
    cold = Evaluator(lambda run: [spec])
    cold.restore("r", "ooms", fired.key.labels, fired.status, 1)
    cold.observe(Sample(T0 + 10 * MIN, "r", metrics={"oom_kills_total": 2.0}, source="prometheus"))
    assert cold.evaluate("r", T0 + 10 * MIN) == []


def test_a_source_outage_freezes_only_the_rules_it_feeds():
    stall = rule(name="stalled", kind="stall", floor="10m", startup="10m")
    ooms = rule(name="ooms", kind="counter_increase", metric="oom_kills_total", increase=1, window="1h")
    ev = Evaluator(lambda run: [stall, ooms])
    for i in range(20):
        ev.observe(Sample(T0 + i * MIN, "r", i, {"train/loss": 2.0}, state="running", source="wandb"))
        ev.observe(Sample(T0 + i * MIN, "r", metrics={"oom_kills_total": 0.0}, source="prometheus"))
    ev.evaluate("r", T0 + 19 * MIN)
    # W&B goes dark for an hour while Prometheus answers, and sees an OOM kill
    for i in range(20, 80):
        ev.observe(
            Sample(
                T0 + i * MIN, "r", metrics={"oom_kills_total": 1.0 if i > 50 else 0.0}, source="prometheus"
            )
        )
        fired = [e.key.rule.name for e in ev.evaluate("r", T0 + i * MIN, frozenset({"wandb"}))]
        assert "stalled" not in fired, "an outage of the step source is never a stall"
        if i == 51:
            assert fired == ["ooms"], "Prometheus' rules go on"
    # W&B answers again with no new step: now the stall is real
    assert [e.key.rule.name for e in ev.evaluate("r", T0 + 80 * MIN)] == ["stalled"]


def test_rows_delivered_again_are_no_rewind():
    ev = Evaluator(lambda run: hero())
    rows = steps([2.0] * 60, every=10.0)
    out = []
    for i in range(0, 60, 10):  # each poll also hands back the previous poll's rows
        for s in rows[max(0, i - 10) : i + 10]:
            ev.observe(s)
        out += events_of(ev, "r", rows[min(59, i + 9)].t)
    assert out == []
    (_, restarts), *_ = [(r, d) for r, d in ev.detectors("r") if r.name == "run_restarted"]
    assert restarts.stats() == {"restarts": 0}


def test_a_real_rewind_later_in_time_is_still_a_restart():
    ev = Evaluator(lambda run: hero())
    for s in steps([2.0] * 30, every=10.0) + steps([2.0] * 5, every=10.0, t0=T0 + 600, start_step=10):
        ev.observe(s)
    assert ("run_restarted", "firing") in [(x[1], x[3]) for x in events_of(ev, "r", T0 + 640)]


def test_odd_values_from_a_buggy_source_are_cleaned_at_the_boundary():
    ev = Evaluator(lambda run: hero())
    for i, odd in enumerate(["1.5", "NaN", None, True, "abc", float("inf")]):
        raw = Sample(T0 + i, "r", i, {"train/loss": odd, "restarts_total": odd, "oom_kills_total": odd})
        ev.observe(clean(raw))
        ev.evaluate("r", T0 + i)
    assert "loss_nonfinite" in {k.rule.name for k, _ in ev.alerts("r")}  # the Inf, as a number


def test_a_restored_alert_of_herowatchs_own_rule_waits_for_it_a_gone_rules_resolves():
    """herowatch's own rules (``RuleSpec.own``: source health, clock skew, watching blind) are applied
    again at every poll, so their restored alerts wait for that; an alert of a rule gone from the config
    resolves at once. Told apart by the stored kind, whatever the rule is called."""
    ev = Evaluator(lambda run: [])
    status = AlertStatus(AlertState.FIRING, T0, fired_at=T0, last_true_at=T0)
    ev.restore(
        "w", "source_unavailable", {"alertname": "source_unavailable"}, status, 1, kind="source_unavailable"
    )
    ev.restore("w", "sources_gone", {"alertname": "sources_gone"}, status, 2, kind="threshold")
    assert blind_rule().own and not rule(name="x", kind="threshold", metric="m", above=1.0).own
    assert [(e.key.rule.name, e.transition.to_state) for e in ev.evaluate("w", T0 + 60)] == [
        ("sources_gone", AlertState.RESOLVED)
    ]
