"""Oracles, strategies and inputs shared by the parser fuzz tests (config, rule files, traces)."""

from __future__ import annotations

import math
from pathlib import Path

import yaml
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from monitor.config import ConfigError, WatchConfig, parse_config
from monitor.rules.loader import parse_rules
from monitor.rules.spec import RuleSpec
from monitor.samples import Sample
from monitor.traces.trace import TraceError, iter_trace, read_trace

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


BIG = str(10**400)  # a number no float holds
