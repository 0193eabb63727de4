"""Long runs of floats in a snapshot are packed (state version 3, ``rules.snapshot_pack``): they come back
exact to the bit and of the very types they had, what does not pack is written item by item as before,
and a damaged packed form is refused (the detector starts cold), never read as other values."""

from __future__ import annotations

import json
import math
import struct
from array import array
from collections import deque

import pytest

from monitor.rules import snapshot
from monitor.samples import Sample


def _round_trip(value):
    data = json.loads(json.dumps(snapshot.encode(value), allow_nan=False))
    return data, snapshot.decode(data)


def _bits(values):
    return [struct.pack("<d", v) for v in values]


def test_floats_come_back_exact_to_the_bit_non_finite_ones_too():
    floats = [0.1, -0.0, 1e-310, 1800000025.2825146, math.inf, -math.inf, math.nan, 2.0**53 + 1]
    for value in (floats, tuple(floats), deque(floats, maxlen=20), array("d", floats)):
        data, back = _round_trip(value)
        assert isinstance(json.dumps(data), str) and "1800000025" not in json.dumps(data)  # packed
        assert type(back) is type(value) and _bits(back) == _bits(value)
    assert _round_trip(deque(floats, maxlen=20))[1].maxlen == 20


def test_a_window_of_tuples_comes_back_with_each_values_type():
    window = [
        (1e8 + i, 1.8e9 + 10.5 * i, i % 3, "x" if i % 2 else None, i % 2 == 0, -0.1 * i) for i in range(9)
    ]
    data, back = _round_trip(window)
    assert "$z" in json.dumps(data)
    assert back == window and [tuple(map(type, row)) for row in back] == [tuple(map(type, r)) for r in window]
    for value in (deque(window, maxlen=12), tuple(window)):
        assert _round_trip(value)[1] == value


def test_what_does_not_pack_is_written_item_by_item():
    cases = [
        [1.0, 2.0, 3.0],  # short
        [1.0, 2, 3.0, 4.0],  # an int among the floats: it stays an int
        [(1.0, 2.0), (1.0,), (3.0, 4.0), (5.0, 6.0)],  # tuples of two lengths
        [(1.0, 2), (1.0, 2.5), (3.0, 4), (5.0, 6)],  # a column mixing ints and floats
        [(1.0, [2.0]), (1.0, [2.0]), (3.0, [4.0]), (5.0, [6.0])],  # a column of lists
    ]
    for value in cases:
        data, back = _round_trip(value)
        assert "$z" not in json.dumps(data) and "$l" not in json.dumps(data)
        assert back == value and [type(v) for v in back] == [type(v) for v in value]


def test_a_samples_float_metrics_pack_and_others_do_not():
    metrics = {"loss": 2.5, "lr": math.nan, "tokens": 4.0e5, "mfu": 41.7}
    sample = Sample(1.5, "r", 7, metrics, source="sim")
    data, back = _round_trip({"s": sample, "m": dict(metrics)})
    assert json.dumps(data).count("$m") == 2
    assert back["s"].metrics.keys() == metrics.keys()
    assert _bits(back["s"].metrics.values()) == _bits(metrics.values())
    assert (back["s"].t, back["s"].run, back["s"].step, back["s"].source) == (1.5, "r", 7, "sim")
    mixed = {"loss": 2.5, "step": 3, "tag": "x", "ok": True}
    data, back = _round_trip(Sample(1.5, "r", 7, mixed))
    assert "$m" not in json.dumps(data) and back.metrics == mixed


def test_a_sample_held_by_several_detectors_is_encoded_once_per_snapshot():
    sample = Sample(1.5, "r", 7, {"loss": 2.5, "lr": 1e-4, "tokens": 4.0e5, "mfu": 41.7})
    with snapshot.sharing():
        a, b = snapshot.encode(sample), snapshot.encode(sample)
    assert a is b
    assert snapshot.encode(sample) is not snapshot.encode(sample)  # outside: each its own


def test_without_packing_the_form_is_version_2s(monkeypatch):
    monkeypatch.setattr(snapshot, "PACK", False)
    assert snapshot.encode([1.0, 2.0, 3.0, 4.0, 5.0]) == [1.0, 2.0, 3.0, 4.0, 5.0]
    assert snapshot.encode(array("d", [1.0, math.inf])) == {"$a": [1.0, {"$f": "inf"}]}


@pytest.mark.parametrize(
    "data",
    [
        {"$l": "not base64!"},
        {"$l": "AAAA"},  # 3 bytes: not doubles
        {"$a": "AAAA"},
        {"$l": {"$z": []}},
        {"$l": {"$z": ["AAAAAAAAAAA=", [1, 2]]}},  # columns of two lengths
        {"$l": {"$z": [[{"$f": "inf"}]]}},  # a column of other than plain values
        {"$q": {"$y": 1}, "n": 3},
        {"$m": [["a"], "AAAAAAAAAAAAAAAAAAAAAA=="]},  # 1 key, 2 values
    ],
)
def test_a_damaged_packed_form_is_refused(data):
    with pytest.raises(snapshot.SnapshotError):
        snapshot.decode(data)
