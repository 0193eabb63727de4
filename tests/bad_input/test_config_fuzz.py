"""Bad input never crashes the parsers: any text given to the watch-config parser, the rule-file parser
or the trace parser gives a typed result or the parser's own error (ConfigError / TraceError) naming the
file and, where a line is known, a line inside the file. Never another exception, never a traceback.

Inputs: random text, YAML-ish fragments, random nested values dumped as YAML, and mutations of the
shipped files (monitor/config/example.yaml, monitor/rules/packs/hero.yaml) and of valid trace lines.
"""

from __future__ import annotations

import json
import math
import os
import re
import tempfile
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from monitor.config import ConfigError, WatchConfig, parse_config
from monitor.rules.loader import parse_rules
from monitor.rules.spec import RuleSpec
from monitor.samples import Sample
from monitor.trace import TraceError, iter_trace, read_trace

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = (REPO / "monitor" / "config" / "example.yaml").read_text(encoding="utf-8")
HERO = (REPO / "monitor" / "rules" / "packs" / "hero.yaml").read_text(encoding="utf-8")
CONFIG_PATH = "fuzz/watch.yaml"
RULES_PATH = "fuzz/rules.yaml"
TRACE_PATH = "fuzz/trace.jsonl"

FUZZ = settings(
    max_examples=60,
    deadline=None,
    database=None,
    derandomize=True,  # the same examples every run: a failure here is a bug, not bad luck
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)
SLOW = settings(FUZZ, max_examples=25)  # each example parses the 300-line hero pack


# ---- the oracles -----------------------------------------------------------------------------------
def _max_line(text: str) -> int:
    # a YAML error at the very end of the text points at the line after the last newline
    return len(text.split("\n")) + 1


def check_config_error(exc: ConfigError, text: str, path: str) -> None:
    rendered = str(exc)
    assert rendered.startswith(f"{path}: "), rendered
    assert exc.problems, rendered
    for p in exc.problems:
        assert isinstance(p.message, str) and p.message, rendered
        if p.line is not None:
            assert isinstance(p.line, int) and 1 <= p.line <= _max_line(text), (p, rendered)
            assert f"{path}:{p.line}:" in rendered, rendered
    assert "Traceback" not in rendered


def assert_config_parses_or_explains(text: str) -> WatchConfig | None:
    try:
        cfg = parse_config(text, CONFIG_PATH)
    except ConfigError as exc:
        check_config_error(exc, text, CONFIG_PATH)
        return None
    assert isinstance(cfg, WatchConfig)
    return cfg


def assert_rules_parse_or_explain(text: str) -> list[RuleSpec] | None:
    try:
        specs = parse_rules(text, RULES_PATH)
    except ConfigError as exc:
        check_config_error(exc, text, RULES_PATH)
        return None
    assert all(isinstance(s, RuleSpec) for s in specs)
    return specs


def check_trace(lines: list, path: str = TRACE_PATH) -> tuple[list[Sample], list[TraceError]]:
    """Strict parse (first error raised) and lenient parse (on_error) agree, errors name path:line."""
    n = len(lines)
    try:
        strict = read_trace(lines, path)
    except TraceError as exc:
        assert 1 <= exc.line <= n, exc
        assert str(exc).startswith(f"{path}:{exc.line}:"), str(exc)
        strict = None
    errors: list[TraceError] = []
    samples = list(iter_trace(lines, path, on_error=errors.append))
    for s in samples:
        assert isinstance(s, Sample)
        assert isinstance(s.t, float) and math.isfinite(s.t), s
        assert isinstance(s.run, str) and s.run
        assert s.step is None or type(s.step) is int
        assert all(isinstance(v, float) for v in s.metrics.values()), s
    for e in errors:
        assert isinstance(e, TraceError)
        assert 1 <= e.line <= n and str(e).startswith(f"{path}:{e.line}:"), str(e)
    assert len({e.line for e in errors}) == len(errors), "one error per bad line"
    if strict is not None:
        assert errors == [] and strict == samples
    else:
        assert errors, "the strict parse failed, so the lenient one must report that line"
    return samples, errors


# ---- strategies -------------------------------------------------------------------------------------
CONFIG_KEYS = [
    "watch",
    "rules",
    "receivers",
    "route",
    "inhibit_rules",
    "watchdog",
    "server",
    "name",
    "poll_interval",
    "labels",
    "target_step",
    "sim",
    "wandb",
    "prometheus",
    "packs",
    "files",
    "overrides",
    "disabled",
    "kind",
    "channel",
    "url",
    "timeout",
    "receiver",
    "matchers",
    "group_by",
    "group_wait",
    "routes",
    "continue",
    "send_resolved",
    "source_matchers",
    "target_matchers",
    "equal",
    "interval",
    "step_time",
    "incidents",
    "at",
    "duration",
    "seed",
    "jitter",
    "checkpoint_every",
    "dashboard_title",
    "evaluation_interval",
    "external_url",
    "repeat_interval",
    "progress_stalled",
    "floor",
    "hero",
]
RULE_KEYS = [
    "rules",
    "name",
    "kind",
    "metric",
    "severity",
    "annotations",
    "for",
    "keep_firing_for",
    "after",
    "floor",
    "k",
    "startup",
    "no_progress",
    "min_restarts",
    "window",
    "states",
    "mode",
    "z",
    "min_rise",
    "floor_window",
    "above",
    "below",
    "fraction",
    "min_samples",
    "after_step",
    "cumulative",
    "increase",
    "delta",
    "min_span",
    "drop",
    "baseline",
    "labels",
    "stall",
    "spike",
    "threshold",
    "non_finite",
    "restarts",
    "state",
    "absent",
    "regression",
    "counter_increase",
    "telemetry_gone",
    "critical",
]

huge_ints = st.sampled_from([10**400, -(10**400), 2**63, -(2**63) - 1, 2**64, 10**19])
odd_floats = st.sampled_from([math.nan, math.inf, -math.inf, 1e308, -1e308, 5e-324, -0.0])
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    huge_ints,
    st.floats(allow_nan=True, allow_infinity=True),
    odd_floats,
    st.text(max_size=20),
    st.sampled_from(
        [
            "15m",
            "1h30m",
            "-5s",
            "0",
            "1e400",
            "nan",
            ".inf",
            "stall",
            "critical",
            "console",
            'severity="critical"',
            "hero",
            "",
            " ",
            "30x",
            "2h2h",
            "0.5ms",
        ]
    ),
)


def nested(keys: list[str]) -> st.SearchStrategy:
    key = st.one_of(st.sampled_from(keys), st.text(max_size=8))
    return st.recursive(
        scalars,
        lambda inner: st.one_of(
            st.lists(inner, max_size=4),
            st.dictionaries(key, inner, max_size=5),
        ),
        max_leaves=25,
    )


def dumped(keys: list[str]) -> st.SearchStrategy[str]:
    top = st.one_of(st.dictionaries(st.sampled_from(keys), nested(keys), max_size=5), nested(keys))
    return top.map(lambda v: yaml.safe_dump(v, allow_unicode=True, sort_keys=False))


YAML_BITS = [
    ": ",
    ":",
    "- ",
    "-",
    " ",
    "  ",
    "\n",
    "\n  ",
    "\n    ",
    "[",
    "]",
    "{",
    "}",
    ",",
    "&a ",
    "*a",
    "&b",
    "*b",
    "!!binary ",
    "!!python/object:os.system ",
    "!!str ",
    "!!int ",
    "!!float ",
    "!!map ",
    "!!set ",
    "!!timestamp ",
    "|",
    ">-",
    "#",
    "'",
    '"',
    "? ",
    "...",
    "---",
    "%YAML 1.1\n",
    "<<: ",
    "~",
    "null",
    "true",
    "no",
    "0x1F",
    "0o17",
    "1_000",
    "1e400",
    ".nan",
    ".inf",
    "-.inf",
    "2024-01-01",
    "12:30:00",
    "\t",
    "\x00",
    "\ufeff",
    "é",
    "\u2028",
    "\r\n",
]


def yamlish(keys: list[str]) -> st.SearchStrategy[str]:
    bit = st.one_of(st.sampled_from(YAML_BITS), st.sampled_from(keys), st.text(max_size=6))
    return st.lists(bit, max_size=40).map("".join)


WRONG_VALUES = [
    "[]",
    "{}",
    "[1, 2]",
    "{a: 1}",
    "null",
    "~",
    "true",
    "-1",
    "0",
    "1e400",
    ".nan",
    "-.inf",
    str(10**400),
    "'x'",
    "stall",
    "15",
    "-15m",
    "not a duration",
    "&x 1",
    "*x",
    "!!binary aGk=",
    "[*x]",
    '"\\u0000"',
    "2024-05-01",
    "{kind: stall}",
    "[{}]",
]


@st.composite
def mutated(draw: st.DrawFn, original: str, keys: list[str]) -> str:
    """The shipped file with a few edits: lines deleted or duplicated, values swapped or made the wrong
    type, unknown keys added, indentation broken."""
    lines = original.split("\n")
    for _ in range(draw(st.integers(1, 4))):
        if not lines:
            lines = [""]
        i = draw(st.integers(0, len(lines) - 1))
        op = draw(st.sampled_from(["delete", "duplicate", "swap", "wrong", "unknown", "indent", "cut"]))
        line = lines[i]
        if op == "delete":
            del lines[i]
        elif op == "duplicate":
            lines.insert(i, line)
        elif op == "swap":
            j = draw(st.integers(0, len(lines) - 1))
            a, b = lines[i].partition(":"), lines[j].partition(":")
            if a[1] and b[1]:
                lines[i], lines[j] = a[0] + ":" + b[2], b[0] + ":" + a[2]
            else:
                lines[i], lines[j] = lines[j], lines[i]
        elif op == "wrong":
            head, colon, _ = line.partition(":")
            value = draw(st.one_of(st.sampled_from(WRONG_VALUES), st.text(max_size=10)))
            lines[i] = (head + ": " + value) if colon else (line + " " + value)
        elif op == "unknown":
            indent = len(line) - len(line.lstrip(" "))
            name = draw(st.one_of(st.sampled_from(keys), st.from_regex(r"[a-z_]{1,10}", fullmatch=True)))
            value = draw(st.sampled_from(WRONG_VALUES))
            lines.insert(i, " " * indent + name + "_x: " + value)
        elif op == "indent":
            lines[i] = " " * draw(st.integers(0, 7)) + line.lstrip(" ")
        else:
            lines[i] = line[: draw(st.integers(0, len(line)))]
    return "\n".join(lines)


# ---- the watch config ----------------------------------------------------------------------------------
def test_the_shipped_example_config_parses():
    assert isinstance(parse_config(EXAMPLE, CONFIG_PATH), WatchConfig)


@FUZZ
@given(st.text(max_size=300))
def test_config_any_text(text):
    assert_config_parses_or_explains(text)


@FUZZ
@given(yamlish(CONFIG_KEYS))
def test_config_yamlish_text(text):
    assert_config_parses_or_explains(text)


@FUZZ
@given(dumped(CONFIG_KEYS))
def test_config_random_values_dumped_as_yaml(text):
    assert_config_parses_or_explains(text)


@FUZZ
@given(mutated(EXAMPLE, CONFIG_KEYS))
def test_config_mutations_of_the_example(text):
    assert_config_parses_or_explains(text)


BIG = str(10**400)
CONFIG_REGRESSIONS = {
    "recursive alias": "watch: &a [*a]\n",
    "self-containing route": "route: &r {routes: [*r]}\n",
    "deep nesting": "watch: " + "[" * 1200 + "\n",
    "deep mappings": "server: " + "{a: " * 1200 + "\n",
    "list as a key": "? [a, b]\n: 1\n",
    "int key": "1: 2\n",
    "python tag": "watch: !!python/object/apply:os.system [echo hi]\n",
    "not a mapping": "- a\n- b\n",
    "a scalar": "hello\n",
    "NUL byte": "watch: \x00\n",
    "BOM": "\ufeffwatch: []\n",
    "two documents": "watch: []\n---\nwatch: []\n",
    "huge int poll_interval": f"watch:\n  - name: a\n    poll_interval: {BIG}\n    sim: {{}}\n",
    "huge int step_time": f"watch:\n  - name: a\n    sim: {{step_time: {BIG}}}\n",
    "huge int evaluation_interval": f"server:\n  evaluation_interval: {BIG}\n",
    "huge int target_step": f"watch:\n  - name: a\n    target_step: {BIG}\n    sim: {{}}\n",
    "huge int jitter": f"watch:\n  - name: a\n    sim: {{jitter: {BIG}}}\n",
    "nan poll_interval": "watch:\n  - name: a\n    poll_interval: .nan\n    sim: {}\n",
}


@pytest.mark.parametrize("text", CONFIG_REGRESSIONS.values(), ids=CONFIG_REGRESSIONS.keys())
def test_config_known_nasty_inputs(text):
    assert_config_parses_or_explains(text)


def test_config_errors_point_at_the_right_line():
    text = EXAMPLE.replace("poll_interval: 30s", "poll_interval: soon")
    with pytest.raises(ConfigError) as info:
        parse_config(text, CONFIG_PATH)
    line = next(i for i, x in enumerate(text.split("\n"), 1) if "poll_interval: soon" in x)
    assert f"{CONFIG_PATH}:{line}: watch[0].poll_interval:" in str(info.value)


def test_a_nan_poll_interval_is_refused():
    """``poll_interval: .nan`` passes the ``v < 1`` check (every comparison with NaN is false)."""
    text = "watch:\n  - name: a\n    poll_interval: .nan\n    sim: {}\n"
    with pytest.raises(ConfigError) as info:
        parse_config(text, CONFIG_PATH)
    assert f"{CONFIG_PATH}:3: watch[0].poll_interval" in str(info.value)


# ---- rule files ---------------------------------------------------------------------------------------
def test_the_shipped_hero_pack_parses():
    assert len(parse_rules(HERO, RULES_PATH)) > 10


@FUZZ
@given(st.text(max_size=300))
def test_rules_any_text(text):
    assert_rules_parse_or_explain(text)


@FUZZ
@given(yamlish(RULE_KEYS))
def test_rules_yamlish_text(text):
    assert_rules_parse_or_explain(text)


@st.composite
def rule_docs(draw: st.DrawFn) -> str:
    rule = st.dictionaries(st.sampled_from(RULE_KEYS), nested(RULE_KEYS), max_size=8)
    doc = draw(
        st.one_of(
            st.fixed_dictionaries({"rules": st.lists(rule, max_size=4)}),
            st.fixed_dictionaries({"rules": nested(RULE_KEYS)}),
            nested(RULE_KEYS),
        )
    )
    return yaml.safe_dump(doc, allow_unicode=True, sort_keys=False)


@SLOW
@given(rule_docs())
def test_rules_random_values_dumped_as_yaml(text):
    assert_rules_parse_or_explain(text)


@SLOW
@given(mutated(HERO, RULE_KEYS))
def test_rules_mutations_of_the_hero_pack(text):
    assert_rules_parse_or_explain(text)


RULE_REGRESSIONS = {
    "recursive alias": "rules: &a [*a]\n",
    "recursive rule": "rules: [&r {name: a, kind: stall, x: *r}]\n",
    "deep nesting": "rules: " + "[" * 1200 + "\n",
    "kind is a list": "rules: [{name: a, kind: [stall]}]\n",
    "kind is a mapping": "rules: [{name: a, kind: {x: 1}}]\n",
    "rules is a mapping": "rules: {a: 1}\n",
    "a rule is a string": "rules: [stall]\n",
    "huge int window": f"rules: [{{name: a, kind: threshold, metric: m, above: 1, window: {BIG}}}]\n",
    "huge int for": f"rules: [{{name: a, kind: stall, for: {BIG}}}]\n",
    "huge int floor": f"rules: [{{name: a, kind: stall, floor: {BIG}}}]\n",
    "huge int above": f"rules: [{{name: a, kind: threshold, metric: m, above: {BIG}}}]\n",
    "huge int z": f"rules: [{{name: a, kind: spike, metric: m, z: {BIG}}}]\n",
    "nan threshold": "rules: [{name: a, kind: threshold, metric: m, above: .nan}]\n",
    "duplicate names": "rules: [{name: a, kind: stall}, {name: a, kind: stall}]\n",
}


@pytest.mark.parametrize("text", RULE_REGRESSIONS.values(), ids=RULE_REGRESSIONS.keys())
def test_rules_known_nasty_inputs(text):
    assert_rules_parse_or_explain(text)


def test_rule_errors_point_at_the_right_line():
    text = HERO.replace("    k: 10\n", "    k: lots\n")
    with pytest.raises(ConfigError) as info:
        parse_rules(text, RULES_PATH)
    line = next(i for i, x in enumerate(text.split("\n"), 1) if "k: lots" in x)
    assert f"{RULES_PATH}:{line}: rules[1].k:" in str(info.value)


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
