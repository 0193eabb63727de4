"""The trace format: what the parser accepts, how it names bad input, and that writer and parser agree."""

from __future__ import annotations

import io
import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from monitor.samples import Sample
from monitor.traces.trace import TraceError, TraceWriter, format_sample, iter_trace, read_trace


def parse(*lines: str) -> list[Sample]:
    return read_trace(list(lines), "t.jsonl")


def error(*lines: str) -> TraceError:
    with pytest.raises(TraceError) as info:
        parse(*lines)
    return info.value


def test_a_full_line():
    (s,) = parse(
        '{"t": 1700000000.5, "run": "r1", "step": 12, "metrics": {"train/loss": 2.5, "n": 3},'
        ' "state": "running", "source": "wandb", "labels": {"team": "a"}, "source_error": "partial",'
        ' "unknown": [1, 2]}'
    )
    assert s == Sample(
        1700000000.5, "r1", 12, {"train/loss": 2.5, "n": 3.0}, "running", "wandb", {"team": "a"}, "partial"
    )
    assert type(s.metrics["n"]) is float


def test_rfc3339_times():
    a, b, c = parse(
        '{"t": "2024-05-01T12:00:00Z", "run": "r"}',
        '{"t": "2024-05-01T14:00:00.250+02:00", "run": "r"}',
        '{"t": "2024-05-01t12:00:01z", "run": "r"}',
    )
    assert a.t == 1714564800.0 and b.t == 1714564800.25 and c.t == 1714564801.0


def test_every_spelling_of_a_non_finite_value():
    (s,) = parse(
        '{"t": 1, "run": "r", "metrics": {"a": null, "b": "NaN", "c": "Infinity", "d": "-Infinity",'
        ' "e": NaN, "f": Infinity, "g": -Infinity, "h": "nan", "i": "-inf"}}'
    )
    m = s.metrics
    assert all(math.isnan(m[k]) for k in "abeh")
    assert m["c"] == m["f"] == math.inf and m["d"] == m["g"] == m["i"] == -math.inf


def test_steps_state_only_samples_blank_lines_and_spaces():
    samples = parse(
        '  {"t": 1, "run": "r", "step": 3.0} \r\n', "", '{"t": 2, "run": "r", "state": "crashed"}'
    )
    assert (
        [s.step for s in samples] == [3, None] and samples[1].state == "crashed" and samples[1].metrics == {}
    )


def test_runs_may_interleave_but_each_run_keeps_time_order():
    samples = parse(
        '{"t": 5, "run": "a"}', '{"t": 1, "run": "b"}', '{"t": 6, "run": "a"}', '{"t": 1, "run": "b"}'
    )
    assert [(s.run, s.t) for s in samples] == [("a", 5), ("b", 1), ("a", 6), ("b", 1)]
    e = error('{"t": 5, "run": "a"}', '{"t": 4, "run": "a"}')
    assert (e.line, e.field) == (2, "t") and "back in time" in str(e)


@pytest.mark.parametrize(
    "line, field, words",
    [
        ("{nope", "", "not valid JSON"),
        ('{"t": 1, "run": "r"} {"t": 2}', "", "Extra data"),
        (b"\xff\xfe{}", "", "not UTF-8"),
        ("[1, 2]", "", "JSON object"),
        ('{"run": "r"}', "t", "required"),
        ('{"t": "yesterday", "run": "r"}', "t", "RFC 3339"),
        ('{"t": "2024-05-01T12:00:00", "run": "r"}', "t", "offset"),
        ('{"t": NaN, "run": "r"}', "t", "finite"),
        ('{"t": 1}', "run", "required"),
        ('{"t": 1, "run": ""}', "run", "non-empty"),
        ('{"t": 1, "run": "r", "step": 1.5}', "step", "integer"),
        ('{"t": 1, "run": "r", "step": "7"}', "step", "integer"),
        ('{"t": 1, "run": "r", "metrics": [1]}', "metrics", "object"),
        (
            '{"t": 1, "run": "r", "metrics": {"train/loss": "high"}}',
            "metrics.train/loss",
            "expected a number",
        ),
        ('{"t": 1, "run": "r", "state": "dead"}', "state", "running"),
        ('{"t": 1, "run": "r", "source": "csv"}', "source", "wandb"),
        ('{"t": 1, "run": "r", "labels": {"a": 1}}', "labels", "string"),
        ('{"t": 1, "run": "r", "source_error": 5}', "source_error", "string"),
    ],
)
def test_bad_lines_name_the_line_and_the_field(line, field, words):
    e = error('{"t": 0, "run": "ok"}', line)
    assert e.line == 2 and e.field == field and words in e.message
    assert str(e).startswith("t.jsonl:2:")


def test_skipping_bad_lines_reports_each():
    seen: list[TraceError] = []
    samples = list(iter_trace(['{"t": 1, "run": "r"}', "garbage", '{"t": 2, "run": "r"}'], "x", seen.append))
    assert len(samples) == 2 and [e.line for e in seen] == [2]


def test_reads_files_and_bytes(tmp_path):
    p = tmp_path / "t.jsonl"
    p.write_bytes(b'{"t": 1, "run": "r", "metrics": {"a": 1.5}}\n{"t": 2, "run": "r"}\n')
    assert [s.t for s in iter_trace(p)] == [1.0, 2.0]
    assert [s.t for s in iter_trace(str(p))] == [1.0, 2.0]


metric_values = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True), st.integers(-(10**6), 10**6).map(float)
)
samples = st.builds(
    Sample,
    t=st.floats(0, 4e9, allow_nan=False),
    run=st.text(min_size=1, max_size=20),
    step=st.none() | st.integers(0, 10**9),
    metrics=st.dictionaries(st.text(min_size=1, max_size=30), metric_values, max_size=8),
    state=st.none() | st.sampled_from(["running", "crashed", "finished", "failed", "killed", "preempted"]),
    source=st.none() | st.sampled_from(["wandb", "prometheus", "sim"]),
    labels=st.none() | st.dictionaries(st.text(max_size=10), st.text(max_size=10), max_size=3),
    source_error=st.none() | st.text(max_size=30),
)


def same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or a == b


@given(samples)
def test_what_the_writer_writes_the_parser_reads_back(sample):
    line = format_sample(sample)
    json.loads(line)  # strict JSON: no bare NaN
    (back,) = read_trace([line])
    assert (back.t, back.run, back.step, back.state, back.source, back.source_error) == (
        sample.t,
        sample.run,
        sample.step,
        sample.state,
        sample.source,
        sample.source_error,
    )
    assert back.labels == (dict(sample.labels) if sample.labels is not None else None)
    assert back.metrics.keys() == sample.metrics.keys()
    assert all(same(back.metrics[k], v) for k, v in sample.metrics.items())


def test_writer_to_a_stream():
    buf = io.StringIO()
    with TraceWriter(buf) as w:
        w.write(Sample(1.0, "r", 1, {"a": math.nan}))
    assert buf.getvalue() == '{"t":1.0,"run":"r","step":1,"metrics":{"a":"NaN"}}\n' and w.count == 1
