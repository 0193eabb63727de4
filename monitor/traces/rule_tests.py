"""``herowatch rules test``: unit tests for rules, in the spirit of ``promtool test rules``.

A test file names its rules (built-in packs or rule files), then lists tests: input series per
metric in expanding notation (notation.py), by step (every point is a step: a W&B row) or by time
(Prometheus-style samples without a step), and the alerts expected at given evaluation times. The
rules run in the same Evaluator, on the same simulated clock, as ``herowatch replay``. The format
is documented in docs/rules.md ("Testing rules").
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from monitor.config.errors import ConfigError, Problem
from monitor.config.yamlpos import format_loc, load_with_positions, problems_from
from monitor.config.yamlsize import read_yaml_file
from monitor.durations import Duration, format_duration
from monitor.rules.loader import TESTS_HINT, apply_overrides, load_rules
from monitor.rules.notation import expand_values, expand_words
from monitor.samples import ALERT_METRIC, DEFAULT_ALERT_WAIT, JobAlert, Sample
from monitor.traces.replay import Replayer
from monitor.traces.trace import STATES, parse_time

SHOWN_LABELS = ("alertname", "severity", "metric")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class ExpectedAlert(_Strict):
    state: Literal["pending", "firing"] = "firing"
    exp_labels: dict[str, str] = Field(default_factory=dict)
    exp_annotations: dict[str, str] = Field(default_factory=dict)

    @field_validator("exp_labels", mode="before")
    @classmethod
    def _strings(cls, v: Any) -> Any:
        return {str(k): str(x) for k, x in v.items()} if isinstance(v, dict) else v


class AlertCheck(_Strict):
    eval_time: Duration
    alertname: str
    exp_alerts: list[ExpectedAlert] = Field(default_factory=list)


class Series(_Strict):
    series: str = Field(description="a metric name, e.g. train/loss")
    values: str | float | None = None


class PushedAlertRow(_Strict):
    """A custom alert the job sends at ``at`` after the start (``herowatch emit alert``)."""

    at: Duration
    title: str
    text: str = ""
    level: Literal["info", "warn", "error"] = "info"
    wait: Duration = DEFAULT_ALERT_WAIT
    resolved: bool = False

    def sample(self, t: float, run: str) -> Sample:
        alert = JobAlert(self.title, self.text, self.level, self.wait, self.resolved)
        return Sample(t, run, metrics={ALERT_METRIC: alert.metric()}, alert=alert)


class RuleTest(_Strict):
    name: str = ""
    interval: Duration | None = None
    by: Literal["step", "time"] = "step"
    start: float | str = 0.0
    start_step: int = 0
    run: str = "test"
    run_labels: dict[str, str] = Field(default_factory=dict)
    overrides: dict[str, dict[str, Any]] = Field(default_factory=dict)
    steps: str | None = Field(default=None, description="the step at each point; '_': no row there")
    state: str | None = Field(default=None, description="the run state at each point, e.g. runningx9 crashed")
    input_series: list[Series] = Field(default_factory=list)
    job_alerts: list[PushedAlertRow] = Field(
        default_factory=list, description="custom alerts the job sends (herowatch emit alert)"
    )
    alert_rule_test: list[AlertCheck] = Field(default_factory=list)

    @model_validator(mode="after")
    def _check(self) -> RuleTest:
        if self.by == "time" and self.steps is not None:
            raise ValueError("'steps' goes with by: step")
        return self


class TestFile(_Strict):
    rule_files: list[str] = Field(default_factory=lambda: ["hero"])
    evaluation_interval: Duration = 15.0
    tests: list[RuleTest] = Field(default_factory=list)


# ---- results --------------------------------------------------------------------------------
@dataclass
class Failure:
    where: str  # file:line
    test: str
    message: str
    invalid: bool = False  # the test file cannot be used (not: the rule behaved otherwise)


@dataclass
class FileResult:
    path: str
    checks: int = 0
    tests: int = 0
    failures: list[Failure] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.failures


def _rows(test: RuleTest, interval: float) -> list[Sample]:
    """The input series as samples, in time order."""
    start = parse_time(test.start)
    series = {s.series: expand_values(s.values) for s in test.input_series}
    states = expand_words(test.state, STATES)
    steps: list[Any] = (
        [int(v) if v is not None else None for v in expand_values(test.steps)] if test.steps else []
    )
    n = max([len(v) for v in series.values()] + [len(states), len(steps)], default=0)
    if test.by == "step" and test.steps is None:
        steps = [test.start_step + i for i in range(n)]
    rows = []
    for i in range(n):
        metrics = {name: vals[i] for name, vals in series.items() if i < len(vals) and vals[i] is not None}
        step = steps[i] if i < len(steps) else None
        state = states[i] if i < len(states) else None
        if not metrics and step is None and state is None:
            continue  # nothing arrived at this point
        rows.append(Sample(start + i * interval, test.run, step, metrics, state))
    if test.job_alerts:
        rows.extend(a.sample(start + a.at, test.run) for a in test.job_alerts)
        rows.sort(key=lambda s: s.t)  # (stable: at one time, the series' row first)
    return rows


def _show(labels: dict[str, str], asked: Iterable[str] = ()) -> str:
    keys = [k for k in SHOWN_LABELS if k in labels] + [
        k for k in asked if k in labels and k not in SHOWN_LABELS
    ]
    return "{" + ", ".join(f'{k}="{labels[k]}"' for k in keys) + "}"


def run_test(test: RuleTest, rules: list, evaluation_interval: float) -> list[str]:
    """Run one test; the failure messages (empty: passed)."""
    interval = test.interval or evaluation_interval
    specs = apply_overrides(rules, test.overrides, "overrides") if test.overrides else rules
    known = {r.name for r in specs}
    replayer = Replayer(
        specs, evaluation_interval, labels_for_run=lambda run: test.run_labels, metrics_profile=None
    )
    rows = _rows(test, interval)
    start = parse_time(test.start)
    failures: list[str] = []
    checks = sorted(enumerate(test.alert_rule_test), key=lambda c: c[1].eval_time)
    i = 0
    for _, check in checks:
        at = start + check.eval_time
        while i < len(rows) and rows[i].t <= at:
            replayer.feed(rows[i])
            i += 1
        replayer.advance_to(at)
        if check.alertname not in known:
            failures.append(f"at {format_duration(check.eval_time)}: no rule named {check.alertname!r}")
            continue
        failures.extend(_compare(replayer, test.run, check, at))
    return failures


def _compare(replayer: Replayer, run: str, check: AlertCheck, at: float) -> list[str]:
    got = [
        (key, status) for key, status in replayer.evaluator.alerts(run) if key.rule.name == check.alertname
    ]
    unmatched = list(got)
    missing = []
    for exp in check.exp_alerts:
        for j, (key, status) in enumerate(unmatched):
            if status.state.value != exp.state:
                continue
            if any(key.labels.get(k) != v for k, v in exp.exp_labels.items()):
                continue
            annotations = replayer.evaluator.annotations(
                key.rule, run, _finding(replayer, run, key.rule.name, at)
            )
            if any(annotations.get(k) != v for k, v in exp.exp_annotations.items()):
                continue
            del unmatched[j]
            break
        else:
            missing.append(exp)
    if not missing and not unmatched:
        return []
    asked = {k for exp in check.exp_alerts for k in exp.exp_labels}
    lines = [f"{check.alertname} at {format_duration(check.eval_time)}:"]
    want = [f"{e.state} {_show(dict(e.exp_labels), e.exp_labels)}" for e in check.exp_alerts] or ["nothing"]
    have = [f"{s.state.value} {_show(dict(k.labels), asked)}" for k, s in got] or [
        "nothing pending or firing"
    ]
    lines.append("    expected: " + "; ".join(want))
    lines.append("    got:      " + "; ".join(have))
    finding = _finding(replayer, run, check.alertname, at)
    if finding is not None:
        lines.append(f"    the rule says: {finding.reason}")
    for exp in missing:
        if exp.exp_annotations and got:
            shown = replayer.evaluator.annotations(got[0][0].rule, run, finding) if finding else {}
            for k, v in exp.exp_annotations.items():
                lines.append(f"    annotation {k}: expected {v!r}, got {shown.get(k)!r}")
    return ["\n".join(lines)]


def _finding(replayer: Replayer, run: str, rule: str, at: float) -> Any:
    for spec, det in replayer.evaluator.detectors(run):
        if spec.name == rule:
            return det.evaluate(at)
    return None


def load_test_file(path: str | Path) -> tuple[TestFile, dict]:
    p = Path(path)
    data, positions = load_with_positions(read_yaml_file(p, "test file"), str(p))
    if not isinstance(data, dict):
        raise ConfigError(str(p), [Problem(1, "", "expected a mapping with rule_files and tests")])
    try:
        return TestFile.model_validate(data), positions
    except ValidationError as exc:
        raise ConfigError(str(p), problems_from(exc, positions, hint=TESTS_HINT)) from None


def run_file(path: str | Path) -> FileResult:
    """Run every test of one file. Problems loading it are failures too (never a traceback)."""
    p = Path(path)
    result = FileResult(str(p))
    try:
        doc, positions = load_test_file(p)
        rules = load_rules(doc.rule_files, p.parent)
    except ConfigError as exc:
        result.failures.append(Failure(str(p), "", exc.render(), invalid=True))
        return result
    for i, test in enumerate(doc.tests):
        line = positions.get(("tests", i))
        where = f"{p}:{line}" if line else str(p)
        name = test.name or format_loc(("tests", i))
        result.tests += 1
        result.checks += len(test.alert_rule_test)
        try:
            messages = run_test(test, rules, doc.evaluation_interval)
        except (ConfigError, ValueError) as exc:
            text = exc.render() if isinstance(exc, ConfigError) else str(exc)
            result.failures.append(Failure(where, name, f"cannot run: {text}", invalid=True))
            continue
        result.failures.extend(Failure(where, name, m) for m in messages)
    return result
