"""The expanding notation of rule tests, and how the runner turns series into samples."""

from __future__ import annotations

import math

import pytest

from monitor.rules.notation import expand_values, expand_words
from monitor.traces.rule_tests import RuleTest, _rows
from monitor.traces.trace import STATES


@pytest.mark.parametrize(
    "text, expected",
    [
        ("-2+4x3", [-2, 2, 6, 10]),
        ("1-2x4", [1, -1, -3, -5, -7]),
        ("1+0.5x2", [1, 1.5, 2]),
        ("3x2", [3, 3, 3]),
        ("1 _ 2", [1, None, 2]),
        ("_x3 5", [None, None, None, 5]),
        ("1e3 -Inf", [1000, -math.inf]),
        (7, [7]),
        (None, []),
    ],
)
def test_expand_values(text, expected):
    assert expand_values(text) == expected


def test_nan_and_repeated_nan():
    values = expand_values("NaN nanx1 +Inf")
    assert all(math.isnan(v) for v in values[:3]) and values[3] == math.inf


@pytest.mark.parametrize("bad", ["abc", "1+x3", "1+2y3", "1x99999999"])
def test_bad_values_are_errors(bad):
    with pytest.raises(ValueError):
        expand_values(bad)


def test_expand_words():
    assert expand_words("runningx2 crashed _ _x2 finished", STATES) == [
        "running",
        "running",
        "running",
        "crashed",
        None,
        None,
        None,
        "finished",
    ]
    with pytest.raises(ValueError, match="not one of"):
        expand_words("runnin", STATES)


def test_rows_by_step_and_by_time():
    test = RuleTest(
        interval=10, input_series=[{"series": "a", "values": "1 _ 3"}, {"series": "b", "values": "5"}]
    )
    rows = _rows(test, 10.0)
    assert [(r.t, r.step, dict(r.metrics)) for r in rows] == [
        (0.0, 0, {"a": 1.0, "b": 5.0}),
        (10.0, 1, {}),
        (20.0, 2, {"a": 3.0}),
    ]
    test = RuleTest(
        by="time", state="runningx1", input_series=[{"series": "oom_kills_total", "values": "_ 1 2"}]
    )
    rows = _rows(test, 60.0)
    assert [(r.t, r.step, r.state, dict(r.metrics)) for r in rows] == [
        (0.0, None, "running", {}),
        (60.0, None, "running", {"oom_kills_total": 1.0}),
        (120.0, None, None, {"oom_kills_total": 2.0}),
    ]


def test_explicit_steps_with_gaps():
    test = RuleTest(steps="0+1x1 _ 5", input_series=[{"series": "a", "values": "1x3"}])
    rows = _rows(test, 10.0)
    assert [(r.step, dict(r.metrics)) for r in rows] == [
        (0, {"a": 1.0}),
        (1, {"a": 1.0}),
        (None, {"a": 1.0}),
        (5, {"a": 1.0}),
    ]
