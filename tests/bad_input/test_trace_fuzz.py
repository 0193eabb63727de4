"""Bad input never crashes the trace parser: random and mutated lines and bytes give samples or a
TraceError naming the line and field; strict and lenient parses agree."""

from __future__ import annotations

import json
import os
import re
import tempfile

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from monitor.traces.trace import TraceError, read_trace
from tests.bad_input.fuzz_support import *  # noqa: F403

# ---- traces -------------------------------------------------------------------------------------------
VALID_LINES = [
    '{"t": 1714564800.0, "run": "hero-a", "step": 1200, "metrics": {"train/loss": 2.31, '
    '"throughput/tokens_per_second": 412000.0}}',
    '{"t": 1714564815.0, "run": "hero-a", "metrics": {"oom_kills_total": 2}, "source": "prometheus"}',
    '{"t": 1714564830.0, "run": "hero-a", "state": "crashed"}',
    '{"t": "2024-05-01T12:00:00Z", "run": "hero-b", "step": 7, "labels": {"team": "pretrain"}}',
    '{"t": 1714564900, "run": "hero-b", "metrics": {"train/loss": "NaN", "x": null, "y": "-Infinity"}}',
    '{"t": 1714564901.5, "run": "hero-b", "source_error": "HTTP 503", "source": "wandb"}',
]
TRACE_KEYS = ["t", "run", "step", "metrics", "state", "source", "labels", "source_error", "train/loss"]

json_values = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(),
        huge_ints,
        st.floats(allow_nan=True, allow_infinity=True),
        st.text(max_size=12),
        st.sampled_from(
            [
                "NaN",
                "Infinity",
                "-inf",
                "2024-05-01T12:00:00Z",
                "2024-05-01T12:00:00",
                "running",
                "crashed",
                "wandb",
                "",
                "  ",
            ]
        ),
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(st.one_of(st.sampled_from(TRACE_KEYS), st.text(max_size=6)), inner, max_size=4),
    ),
    max_leaves=12,
)


@st.composite
def mutated_line(draw: st.DrawFn) -> str:
    obj = json.loads(draw(st.sampled_from(VALID_LINES)))
    op = draw(st.sampled_from(["set", "delete", "add", "metric", "cut", "insert", "raw"]))
    if op == "set":
        obj[draw(st.sampled_from(sorted(obj)))] = draw(json_values)
    elif op == "delete":
        obj.pop(draw(st.sampled_from(sorted(obj))))
    elif op == "add":
        obj[draw(st.sampled_from(TRACE_KEYS + ["extra"]))] = draw(json_values)
    elif op == "metric":
        obj.setdefault("metrics", {})
        if isinstance(obj["metrics"], dict):
            obj["metrics"][draw(st.sampled_from(["train/loss", "x", ""]))] = draw(json_values)
    text = json.dumps(obj)  # allow_nan: writes NaN / Infinity, which Python's json reads back
    if op == "cut":
        text = text[: draw(st.integers(0, len(text)))]
    elif op == "insert":
        i = draw(st.integers(0, len(text)))
        junk = draw(st.sampled_from(["{", "}", '"', ",", ":", "\\", "\x00", "\n", " ", "é"]))
        text = text[:i] + junk + text[i:]
    elif op == "raw":
        i = draw(st.integers(0, len(text)))
        text = text[:i] + draw(st.text(max_size=5)) + text[i:]
    return text


trace_line = st.one_of(
    mutated_line(),
    st.sampled_from(VALID_LINES),
    json_values.map(json.dumps),
    st.text(max_size=60),
    st.sampled_from(["", " ", "\t", "  {}", "null", "[]", "1", '"x"', "{", "NaN", "\ufeff{}", "\r"]),
)


@FUZZ
@given(st.lists(trace_line, max_size=12))
def test_trace_random_and_mutated_lines(lines):
    check_trace(lines)


@FUZZ
@given(
    st.lists(
        st.one_of(trace_line.map(lambda s: s.encode("utf-8", "surrogatepass")), st.binary(max_size=40)),
        max_size=10,
    )
)
def test_trace_bytes_lines(lines):
    check_trace(lines)


@settings(FUZZ, max_examples=30)
@given(st.lists(trace_line.filter(lambda s: "\n" not in s and "\r" not in s), max_size=10))
def test_trace_from_a_file(lines):
    fd, name = tempfile.mkstemp(suffix=".jsonl")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", errors="surrogatepass") as fh:
            fh.write("\n".join(lines) + "\n")
        try:
            read_trace(name)
        except TraceError as exc:
            assert 1 <= exc.line <= max(len(lines), 1) and str(exc).startswith(f"{name}:{exc.line}:")
    finally:
        os.unlink(name)


TRACE_REGRESSIONS = {
    "10**400 as t": f'{{"t": {BIG}, "run": "a"}}',
    "-10**400 as t": f'{{"t": -{BIG}, "run": "a"}}',
    "10**400 as a metric": f'{{"t": 1.0, "run": "a", "metrics": {{"x": {BIG}}}}}',
    "10**400 as a step": f'{{"t": 1.0, "run": "a", "step": {BIG}}}',
    "1e400 as t": '{"t": 1e400, "run": "a"}',
    "1e400 as a step": '{"t": 1.0, "run": "a", "step": 1e400}',
    "NaN as a step": '{"t": 1.0, "run": "a", "step": NaN}',
    "deep nesting": '{"t": 1.0, "run": "a", "metrics": ' + "[" * 100_000 + "}",
    "deep nesting, leading space": " " + "[" * 100_000,
    "year 99999": '{"t": "99999-01-01T00:00:00Z", "run": "a"}',
    "NUL time": '{"t": "\\u0000", "run": "a"}',
    "lone surrogate": '{"t": 1.0, "run": "\\ud800"}',
    "labels not strings": '{"t": 1.0, "run": "a", "labels": {"a": 1}}',
}


@pytest.mark.parametrize("line", TRACE_REGRESSIONS.values(), ids=TRACE_REGRESSIONS.keys())
def test_trace_known_nasty_lines(line):
    check_trace([VALID_LINES[0], line, VALID_LINES[2]])


@example(["", VALID_LINES[1], VALID_LINES[0]])  # a run's line going back in time
@FUZZ
@given(st.lists(st.sampled_from(VALID_LINES + ["", "x"]), max_size=8))
def test_trace_errors_name_the_line_they_are_on(lines):
    samples, errors = check_trace(lines)
    for e in errors:
        line = lines[e.line - 1]
        assert line == "x" or re.search(r'"t"', line), (e, line)
