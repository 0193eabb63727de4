"""Detector windows are lists now (an empty ``deque`` cost 624 bytes, a list 56): snapshots written
before, which hold them as deques (``{"$q": [...], "n": ...}``), still read back, and the restored
detector goes on exactly as one that never restarted (and as one restored from the new form)."""

from __future__ import annotations

import json
from collections import deque
from typing import Any

import pytest

from monitor.rules import snapshot
from monitor.rules.base import DETECTORS
from monitor.rules.loader import load_pack
from monitor.samples import RunState, Sample
from tests.rules.real_scenarios import Scenario
from tests.rules.test_observe_many import with_throughput
from tests.rules.test_replay_batched import plain

# the windows that were deques: name -> their maxlen then
WINDOWS = {
    "_buckets": None,  # threshold
    "_recent": None,  # drop
    "_base": None,
    "events": None,  # counter_increase
    "times": None,  # restarts
    "ooms": 8,  # ended
    "_fifo": None,  # a spike baseline
    "_diffs": None,
    "_closed": None,
    "_cmins": None,
    "_win": None,  # flatline
    "_hi": None,
    "_lo": None,
    "_baseq": None,
}


def old_form(attrs: dict[str, Any]) -> int:
    """Rewrite a snapshot's attributes (and a nested object's) as the code before wrote them: the
    windows as deques. Returns how many of them held values."""
    n = 0
    for name, value in attrs.items():
        value = attrs[name] = pairs(name, value)
        if name in WINDOWS and isinstance(value, list):
            attrs[name] = {"$q": value, "n": WINDOWS[name]}
            n += bool(value)
        elif isinstance(value, dict) and "$o" in value:
            n += old_form(value["a"])
    return n


def pairs(name: str, value: Any) -> Any:
    """A spike baseline's values as the versions before wrote them: (t, y) pairs and a list of differences,
    not arrays of doubles (``{"$a": [t, y, t, y, ...]}``); a threshold's closed buckets as 5-tuples."""
    if name in ("_fifo", "_diffs") and isinstance(value, dict) and "$a" in value:
        flat = value["$a"]
        return [{"$t": flat[i : i + 2]} for i in range(0, len(flat), 2)] if name == "_fifo" else flat
    if name == "_buckets" and isinstance(value, dict) and "$a" in value:  # a threshold's: 5-tuples
        flat = value["$a"]
        return [
            {"$t": [*flat[i : i + 2], int(flat[i + 2]), flat[i + 3], int(flat[i + 4])]}
            for i in range(0, len(flat), 5)
        ]
    return value


def deques(obj: Any, depth: int = 0) -> int:
    """The deques a restored detector (and the objects it is made of) holds."""
    if isinstance(obj, deque):
        return 1
    if depth > 3 or not type(obj).__module__.startswith("monitor.rules"):
        return 0
    names = [
        *getattr(obj, "__dict__", ()),
        *(n for c in type(obj).__mro__ for n in getattr(c, "__slots__", ())),
    ]
    return sum(deques(getattr(obj, n), depth + 1) for n in names if n != "rule" and hasattr(obj, n))


def events(n: int = 900) -> list[Sample]:
    """A run that OOMs and restarts now and then (steps rewind, the state flips), for the counter,
    restart and end rules."""
    out, step, kills, t0 = [], 0, 0.0, 1_700_000_000.0
    for i in range(n):
        t = t0 + 30.0 * i
        if i % 40 == 20:
            kills += 1
        state = RunState.RUNNING
        if i % 150 == 149:
            state, step = RunState.CRASHED, max(0, step - 25)
        step += 1
        metrics = {"oom_kills_total": kills, "optim/skipped_step": float(i // 60), "xid_errors_total": 0.0}
        out.append(Sample(t, "r", step, metrics, state=state))
    return out


def version_2(det: Any) -> dict[str, Any]:
    """The detector's snapshot as state version 2 wrote it (windows as JSON lists, not packed): the
    form the older ones are rewritten from."""
    packing, snapshot.PACK = snapshot.PACK, False
    try:
        return json.loads(json.dumps(det.export_state()))
    finally:
        snapshot.PACK = packing


def goes_on_alike(  # noqa: ANN001
    spec: Any, samples: list[Sample], cut: int, to_old, as_deques: bool = False, fires: bool = False
) -> None:
    """Four detectors of ``spec`` fed ``samples``; at ``cut`` one is restored from the snapshot as it is,
    one from it as version 2 wrote it (not packed), one from that rewritten by ``to_old(detector, attrs)``
    into an older form (its windows read back as deques if ``as_deques``, else as lists): from there all
    four say the same, timers included (and, if ``fires``, the rule fired after the cut)."""
    kind = DETECTORS[spec.kind]
    old, two, new, kept = kind(spec, "r"), kind(spec, "r"), kind(spec, "r"), kind(spec, "r")
    out: dict[int, list] = {id(d): [] for d in (old, two, new, kept)}
    for k, s in enumerate(samples):
        if k == cut:
            saved = json.loads(json.dumps(kept.export_state()))
            assert new.import_state(json.loads(json.dumps(saved)))
            assert two.import_state(version_2(kept))
            saved = version_2(kept)
            assert to_old(kept, saved["state"]) > 0  # the form before: deques, with values in them
            assert old.import_state(saved)
            assert deques(new) == deques(two) == 0 and (deques(old) > 0 if as_deques else deques(old) == 0)
        for d in (old, two, new, kept):
            d.observe(s)
            for now in (s.t, s.t + 1800.0):  # (a clocked rule: its timers too)
                f = d.evaluate(now)
                out[id(d)].append((d.hot, d.wake_at, f.active, f.value, f.reason, f.onset))
    assert out[id(old)][cut:] == out[id(kept)][cut:] == out[id(new)][cut:] == out[id(two)][cut:]
    assert not fires or any(row[2] for row in out[id(kept)][cut:])  # it fired after the cut


CASES = ["grad_norm_high", "throughput_drop", "loss_spike", "loss_jump"]
EVENTS = ["oom_kills", "skipped_steps", "run_crashed", "crash_loop", "run_restarted"]


@pytest.mark.parametrize("name", CASES + EVENTS)
def test_an_old_snapshot_with_deques_reads_back_and_goes_on_alike(name):
    spec = {r.name: r for r in load_pack("hero")}[name]
    if name in EVENTS:
        samples = events()
        cut = len(samples) * 2 // 3
    else:
        sc = Scenario(loss_shift=lambda step: 1.0 if 4000 <= step < 4400 else 0.0, last_step=6000)
        samples = with_throughput(plain(sc.build()))
        cut = next(i for i, s in enumerate(samples) if s.step is not None and s.step >= 4100)
    # (a threshold turns its buckets, its only window, into an array of doubles as it restores them)
    kept = name != "grad_norm_high"
    goes_on_alike(spec, samples, cut, lambda det, attrs: old_form(attrs), as_deques=kept)


def test_an_old_flatline_snapshot_with_deques_reads_back_and_goes_on_alike():
    spec = {r.name: r for r in load_pack("rl")}["rl_reward_flatline"]
    kind = DETECTORS[spec.kind]
    old, kept = kind(spec, "r"), kind(spec, "r")
    samples = [
        Sample(1_700_000_000.0 + 60 * i, "r", i, {spec.metric: 0.5 + (0.01 * (i % 7) if i < 150 else 0.0)})
        for i in range(300)
    ]
    for k, s in enumerate(samples):
        if k == 120:
            saved = version_2(kept)
            assert old_form(saved["state"]) >= 4
            assert old.import_state(saved) and deques(old) == 4
        if k >= 120:
            old.observe(s)
        kept.observe(s)
        if k >= 120:
            assert (old.hot, old.evaluate(s.t)) == (kept.hot, kept.evaluate(s.t))
    assert kept.hot  # flat since sample 150


def test_a_snapshot_says_its_version_older_ones_read_and_a_newer_one_starts_cold(monkeypatch):
    """The windows' forms changed (lists, arrays of doubles, then packed doubles): a snapshot of this
    version says so by its version, which the release before does not read (its runs start cold on a
    rollback: safe), while this one still reads the snapshots of the releases before."""
    from monitor.engine.evaluator import Evaluator
    from monitor.engine.run_rules import STATE_VERSION

    spec = {r.name: r for r in load_pack("hero")}["loss_spike"]
    ev = Evaluator(lambda run: [spec])
    samples = plain(Scenario(last_step=600).build())
    for s in samples:
        ev.observe(s)
    run = samples[0].run
    state = json.loads(json.dumps(ev.export_state(run)))
    assert state["v"] == STATE_VERSION == 3
    assert "$z" in json.dumps(state)  # its windows packed
    assert Evaluator(lambda run: [spec]).import_state(run, state) == 1
    monkeypatch.setattr(snapshot, "PACK", False)
    state = json.loads(json.dumps(ev.export_state(run)))
    state["v"] = 2  # the release before wrote v 2: the windows as JSON lists
    assert "$z" not in json.dumps(state)
    assert Evaluator(lambda run: [spec]).import_state(run, state) == 1
    state["v"] = 1  # and the one before that v 1 (with the same detectors' fields, older forms read)
    assert old_form(state["detectors"]["loss_spike"]["state"]) > 0
    assert Evaluator(lambda run: [spec]).import_state(run, state) == 1
    state["v"] = 4  # a newer release's: not guessed at
    assert Evaluator(lambda run: [spec]).import_state(run, state) == 0
