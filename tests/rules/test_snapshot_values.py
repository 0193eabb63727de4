"""A detector's snapshot gives back the values it held, whatever their kind: non-finite numbers in its
attributes, in dicts, in windows and in the sample it kept, nested objects, and it refuses state nested
deeper than ``MAX_DEPTH`` (the writer encodes plain values without a call each: same result)."""

from __future__ import annotations

import json
import math
import sys
import types
from collections import deque

import pytest

from monitor.rules import snapshot
from monitor.samples import RunState, Sample


class Holder:  # any object of the rule modules' kind: its attributes are its state
    __module__ = "monitor.rules.test_holder"


def _round_trip(value):
    return snapshot.decode(json.loads(json.dumps(snapshot.encode(value), allow_nan=False)))


def test_non_finite_numbers_come_back_wherever_they_were_held():
    sample = Sample(1.5, "r", 7, {"loss": math.nan, "lr": math.inf, "step": 3, "tag": "x", "ok": True})
    value = {
        "a": -math.inf,
        "b": [1.0, math.nan, None, "t", False, 2],
        "c": (math.inf, 1),
        "d": deque([0.5, -math.inf], maxlen=4),
        3: {math.inf: math.nan},
        "e": sample,
        "f": RunState.RUNNING,
        "g": {"x", "y"},
    }
    back = _round_trip(value)
    assert math.isinf(back["a"]) and back["a"] < 0
    assert back["b"][0] == 1.0 and math.isnan(back["b"][1]) and back["b"][2:] == [None, "t", False, 2]
    assert back["c"] == (math.inf, 1)
    assert list(back["d"]) == [0.5, -math.inf] and back["d"].maxlen == 4
    ((k, v),) = back[3].items()
    assert k == math.inf and math.isnan(v)
    s = back["e"]
    assert (s.t, s.run, s.step) == (1.5, "r", 7)
    assert math.isnan(s.metrics["loss"]) and s.metrics["lr"] == math.inf
    assert {k: s.metrics[k] for k in ("step", "tag", "ok")} == {"step": 3, "tag": "x", "ok": True}
    assert back["f"] == RunState.RUNNING and back["g"] == {"x", "y"}


def test_an_objects_attributes_come_back_as_they_were(monkeypatch):
    module = types.ModuleType(Holder.__module__)
    module.Holder = Holder
    monkeypatch.setitem(sys.modules, Holder.__module__, module)
    holder = Holder()
    holder.hot, holder.wake_at, holder.n, holder.name, holder.none = True, -math.inf, 3, "loss", None
    holder.window = deque([1.0, math.nan], maxlen=8)
    holder.baseline = Holder()  # a nested object (a spike baseline in a spike detector)
    holder.baseline.streak_min, holder.baseline.log, holder.baseline.points = math.inf, True, [2.0, 3.5]
    holder.skipped = "not saved"
    state = snapshot.encode_attrs(holder, skip=frozenset({"skipped"}))
    assert "skipped" not in state
    again = Holder.__new__(Holder)
    snapshot.restore_attrs(again, json.loads(json.dumps(state, allow_nan=False)))
    assert (again.hot, again.wake_at, again.n, again.name, again.none) == (True, -math.inf, 3, "loss", None)
    assert again.window[0] == 1.0 and math.isnan(again.window[1]) and again.window.maxlen == 8
    assert type(again.baseline) is Holder
    assert vars(again.baseline) == {"streak_min": math.inf, "log": True, "points": [2.0, 3.5]}


def test_state_nested_too_deeply_is_refused():
    deep: list = [1.0]
    for _ in range(snapshot.MAX_DEPTH + 1):
        deep = [deep]
    with pytest.raises(snapshot.SnapshotError):
        snapshot.encode(deep)
    nested: dict = {"k": 1.0}
    for _ in range(snapshot.MAX_DEPTH + 1):
        nested = {"k": nested}
    with pytest.raises(snapshot.SnapshotError):
        snapshot.encode(nested)
    with pytest.raises(snapshot.SnapshotError):
        snapshot.encode(object())
