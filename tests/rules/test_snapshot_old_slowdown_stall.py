"""The slowdown rule's windows (and its cycle's) and the stall rule's are lists now (an empty ``deque``
cost 624 bytes, eleven a run): snapshots written before, which hold them as deques with their bounds as
``maxlen`` (``{"$q": [...], "n": ...}``) and no ``cap``, still read back, as lists, and the restored
detector goes on exactly as one that never restarted (and as one restored from the new form)."""

from __future__ import annotations

from array import array
from typing import Any

from monitor.rules.loader import load_pack
from monitor.samples import RunState, Sample
from tests.rules.helpers_rules import T0
from tests.rules.real_scenarios import Scenario, pai_jitter
from tests.rules.test_replay_batched import plain
from tests.rules.test_snapshot_old_windows import goes_on_alike, pairs


def old_form(attrs: dict[str, Any], bounds: dict[str, int]) -> int:
    """Rewrite a snapshot's attributes as the code before wrote them: the windows named in ``bounds``
    as deques of that ``maxlen``, no ``cap``. Returns how many of them held values."""
    attrs.pop("cap", None)
    n = 0
    for name, bound in bounds.items():
        value = attrs[name]
        if isinstance(value, dict) and "$a" in value:  # an array of doubles now (the cycle's buckets)
            value = value["$a"]
        assert isinstance(value, list)
        attrs[name] = {"$q": value, "n": bound}
        n += bool(value)
    return n


def test_an_old_slowdown_snapshot_with_deques_reads_back_and_goes_on_alike():
    spec = {r.name: r for r in load_pack("hero")}["throughput_slowdown"].model_copy(update={"metric": None})
    jitter, samples, t = pai_jitter(), [], 0.0
    for i in range(4000):  # 20 s a step with the real jitter (a 300-step cycle), 8% slower from step 3200
        samples.append(Sample(T0 + t, "r", i, {}, RunState.RUNNING))
        t += 20.0 * jitter[i % len(jitter)] * (1.08 if i >= 3200 else 1.0)

    def to_old(d: Any, state: dict[str, Any]) -> int:
        n = old_form(state, {"recent": d._lagged + 2, "base": d.cap, "base_n": d.cap, "held": d.cap})
        return n + old_form(
            state["season"]["a"], {"pos": d.season.cap, "xs": d.season.cap, "ws": d.season.cap}
        )

    goes_on_alike(spec, samples, 3000, to_old, fires=True)

    def as_lists(d: Any, state: dict[str, Any]) -> int:  # the form before the cycle's arrays: lists
        season = state["season"]["a"]
        for name in ("pos", "xs", "ws"):
            season[name] = season[name]["$a"]
        return len(season["pos"])

    goes_on_alike(spec, samples, 3000, as_lists, fires=True)


def test_an_old_stall_snapshot_with_deques_reads_back_and_goes_on_alike():
    spec = {r.name: r for r in load_pack("hero")}["progress_stalled"]
    samples, t, step = [], 0.0, 0
    for i in range(1500):  # 30 s a step, a 20-minute save every 100 steps, a crash and restore every 400
        if i % 400 == 399:
            samples.append(Sample(T0 + t, "r", None, {}, RunState.CRASHED))
            t, step = t + 900.0, step - 50
            samples.append(Sample(T0 + t, "r", None, {}, RunState.RUNNING))
            t += 600.0
        samples.append(Sample(T0 + t, "r", step, {}, RunState.RUNNING))
        step += 1
        t += 30.0 + (1200.0 if step % 100 == 0 else 0.0)
    t += 4 * 3600.0
    samples.append(Sample(T0 + t, "r", step, {}, RunState.RUNNING))  # ... then a hang: it fires
    samples.append(Sample(T0 + t + 7200.0, "r", None, {}, RunState.RUNNING))

    def to_old(d: Any, state: dict[str, Any]) -> int:
        return old_form(state, {"intervals": spec.window, "strides": 32, "restores": 8, "pauses": 8})

    goes_on_alike(spec, samples, 1000, to_old, fires=True)


def test_a_spike_snapshot_of_the_version_before_reads_back_its_values_as_arrays():
    """The version before kept a spike baseline's values as a list of (t, y) pairs and their differences
    as a list (~100 B a value, now 16 B in two arrays of doubles)."""
    spec = {r.name: r for r in load_pack("hero")}["loss_spike"]
    sc = Scenario(loss_shift=lambda step: 1.0 if 4000 <= step < 4400 else 0.0, last_step=6000)
    samples = plain(sc.build())  # the real loss curve, raised by 1.0 for 400 steps
    cut = next(i for i, s in enumerate(samples) if s.step is not None and s.step >= 3900)

    def to_old(d: Any, state: dict[str, Any]) -> int:
        base = state["baseline"]["a"]
        for name in ("_fifo", "_diffs"):
            base[name] = pairs(name, base[name])
        assert isinstance(d.baseline._fifo, array) and base["_fifo"][0]["$t"]
        return len(base["_fifo"])

    goes_on_alike(spec, samples, cut, to_old, fires=True)
