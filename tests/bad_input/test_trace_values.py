"""Odd metric values and odd rows through the trace parser: NaN, Inf, 1e308 and booleans are read as
floats; strings, lists and 10**400 are refused naming the line and the metric; times and steps must be
finite seconds and integers; negative and duplicate steps are read as written; a run going back in time
is an error on that line."""

from __future__ import annotations

import json
import math

import pytest

from monitor.samples import Sample
from monitor.traces.trace import TraceError, read_trace

PATH = "values.jsonl"
BIG = str(10**400)


def one(value_json: str, **extra) -> list[Sample]:
    row = {"t": 1714564800.0, "run": "r", "step": 1, **extra}
    text = json.dumps(row)[:-1] + f', "metrics": {{"train/loss": {value_json}}}}}'
    return read_trace([text], PATH)


@pytest.mark.parametrize(
    "written, expected",
    [
        ("NaN", math.nan),
        ('"NaN"', math.nan),
        ('"nan"', math.nan),
        ("null", math.nan),
        ("Infinity", math.inf),
        ('"Infinity"', math.inf),
        ('"-Infinity"', -math.inf),
        ('"-inf"', -math.inf),
        ("1e308", 1e308),
        ("-1e308", -1e308),
        ("1e400", math.inf),
        ("-1e400", -math.inf),
        ("true", 1.0),
        ("false", 0.0),
        ("0", 0.0),
        ("-0.0", -0.0),
        ("5e-324", 5e-324),
    ],
)
def test_trace_reads_odd_numbers(written, expected):
    (s,) = one(written)
    got = s.metrics["train/loss"]
    assert isinstance(got, float)
    assert (math.isnan(got) and math.isnan(expected)) or got == expected


@pytest.mark.parametrize(
    "written",
    ['"abc"', '"1.5"', '""', "[1]", '{"v": 1}', BIG, "-" + BIG, '"9e999"'],
)
def test_trace_refuses_non_numbers_naming_line_and_metric(written):
    with pytest.raises(TraceError) as info:
        second = f'{{"t": 2.0, "run": "r", "metrics": {{"train/loss": {written}}}}}'
        read_trace(['{"t": 1.0, "run": "r"}', second], PATH)
    assert info.value.line == 2 and info.value.field == "metrics.train/loss"
    assert str(info.value).startswith(f"{PATH}:2: metrics.train/loss:")


@pytest.mark.parametrize("t", [BIG, "-" + BIG, "1e400", "NaN", "-Infinity", '"yesterday"', "true", "[]"])
def test_trace_refuses_times_that_are_not_finite_seconds(t):
    with pytest.raises(TraceError) as info:
        read_trace([f'{{"t": {t}, "run": "r"}}'], PATH)
    assert info.value.line == 1 and info.value.field == "t"


@pytest.mark.parametrize("step", ["1.5", '"7"', "true", "NaN", "1e400", "[]"])
def test_trace_refuses_steps_that_are_not_integers(step):
    with pytest.raises(TraceError) as info:
        read_trace([f'{{"t": 1.0, "run": "r", "step": {step}}}'], PATH)
    assert info.value.field == "step" and info.value.line == 1


def test_trace_negative_and_duplicate_steps_are_read_as_written():
    lines = [
        '{"t": 1.0, "run": "r", "step": -5}',
        '{"t": 2.0, "run": "r", "step": -5}',
        '{"t": 2.0, "run": "r", "step": -5}',
        '{"t": 3.0, "run": "r", "step": 12.0}',
    ]
    assert [s.step for s in read_trace(lines, PATH)] == [-5, -5, -5, 12]


def test_trace_a_run_going_back_in_time_is_an_error_on_that_line_but_runs_may_interleave():
    lines = [
        '{"t": 10.0, "run": "a", "step": 1}',
        '{"t": 5.0, "run": "b", "step": 1}',
        '{"t": 9.0, "run": "a", "step": 2}',
    ]
    with pytest.raises(TraceError) as info:
        read_trace(lines, PATH)
    assert info.value.line == 3 and info.value.field == "t" and "back in time" in info.value.message
