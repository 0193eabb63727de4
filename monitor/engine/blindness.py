"""``watching_blind``: herowatch's own warning that a run's rules cannot see, one for the live engine and
for replay.

Each cause is an alert of its own: one per essential input the run never sent or stopped sending
(label ``input``), and one for the optional inputs that stopped; an optional input never sent is no
blindness (coverage shows it, nobody is paged). Each names the blind rules, the inputs they miss and
what the run does send that looks related, with the fix ("map them with metrics: {...} or a
metrics_profile"); an input a source queried without result says why (a Prometheus query with no
series: the query, and the labels the metric has). A run that goes blind on one more essential input
gets a new alert, so a new notifying message; more rules going blind on the same input update the
text. When most running runs of a watch are blind for the same cause, one alert on the watch lists
them and inhibits the runs' own (the default ``inhibit_rules``): one message, not fifty. The alert is
a warning, routed like any other, and resolves when its inputs arrive or their rules are turned off.
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Literal

from alerts.model import Finding, Severity
from monitor.durations import format_duration
from monitor.engine.alert_events import AlertEvent
from monitor.engine.coverage import RunCoverage
from monitor.profiles.shape import Shape
from monitor.profiles.suggest import hint, related, unused_keys
from monitor.rules.absent import AbsentSpec
from monitor.rules.base import ANY, STATE, STEP
from monitor.rules.spec import RuleSpec

if TYPE_CHECKING:
    from monitor.engine.evaluator import Evaluator

NAME = "watching_blind"
SCOPE = {"scope": "watch"}
# Most runs of a watch blind alike: the watch's one watching_blind message stands for theirs.
INHIBIT = (
    ['alertname="watching_blind"', 'scope="watch"'],
    ['alertname="watching_blind"', 'scope!="watch"'],
    ["watch", "input"],
)
INPUT = "input"  # the label naming the essential input a watching_blind alert is about
MAX_RULES = 4  # rules named per input before "+N more"
MAX_KEYS = 6  # run keys quoted
MAX_RUNS = 10
WORDS = {STEP: "the step counter", STATE: "the run state", ANY: "any data"}


class BlindSpec(RuleSpec):
    kind: Literal["watching_blind"] = "watching_blind"
    own: ClassVar[bool] = True


@functools.cache
def blind_rule() -> BlindSpec:
    return BlindSpec(
        name=NAME,
        kind=NAME,
        severity=Severity.WARNING,
        for_=0.0,
        labels={"category": "herowatch"},
        annotations={
            "summary": "{run}: {reason}",
            "description": "These rules get no data from this run, so they cannot fire: an incident "
            "they watch for would go unpaged. Map the run's key names to the rules' names (metrics: "
            "in the watch config, or metrics_profile), or fix the query; `herowatch doctor` checks a "
            "set-up before it is trusted.",
            "runbook_url": "{runbooks}#watching-blind",
        },
    )


def _name(name: str) -> str:
    return WORDS.get(name, name)


def _rules(names: list[str]) -> str:
    more = f" +{len(names) - MAX_RULES} more" if len(names) > MAX_RULES else ""
    return ", ".join(names[:MAX_RULES]) + more


@dataclass(frozen=True)
class Blind:
    """One run's blindness (or one cause of it) in words, and the reason key that tells runs blind
    alike. ``input``: the essential input this blindness is about (each is a cause of its own: a run
    that goes blind on one more essential input is news); None: all of the run's blind inputs (the
    run's summary) or, among its causes, the optional inputs that stopped."""

    run: str
    reason: str  # the missing inputs, sorted: runs with the same key are blind for the same reason
    text: str
    input: str | None = None


def _missing(cov: RunCoverage, silenced: Iterable[str]) -> dict[str, tuple[list[str], bool]]:
    """input -> (the rules it leaves blind, whether the run must send it), but for the stopped inputs an
    ``absent`` rule reports."""
    skip = set(silenced)
    essential = {i.name for r in cov.rules for i in r.inputs if i.state == "blind" and i.essential}
    return {
        name: (rules, name in essential)
        for name, rules in cov.blind_inputs().items()
        if not (name in skip and (i := cov.input(name)) is not None and i.last_at is not None)
    }


def _text(
    cov: RunCoverage,
    missing: Mapping[str, list[str]],
    keys: list[str],
    gaps: Mapping[str, str],
    renames: Mapping[str, str] | None,
    shapes: Mapping[str, Shape] | None,
) -> str:
    used = {i.name for r in cov.rules for i in r.inputs}
    parts = []
    for name, rules in missing.items():
        st = cov.input(name)
        silent = (
            f" for {format_duration(max(0.0, st.silent_for))}" if st and st.silent_for is not None else ""
        )
        why = f"{st.why}; " if st is not None else ""
        part = f"no value of {_name(name)}{silent} ({why}rules {_rules(rules)})"
        if name in gaps:
            part += f": {gaps[name]}"
        else:
            near = related(name, unused_keys(keys, used, renames), shapes)
            if near:
                part += "; the run logs " + ", ".join(repr(k) for k in near)
        parts.append(part)
    text = "; ".join(parts)
    metric_missing = [n for n in missing if n not in WORDS and n not in gaps]
    if metric_missing:
        # the optional inputs the run does not log but seems to under another name go in the same fix
        unused = dict.fromkeys(i.name for r in cov.rules for i in r.inputs if i.state == "unused")
        also = [n for n in unused if n not in WORDS and n not in missing]
        free = unused_keys(keys, used, renames)  # a key a rule reads already is no candidate
        fix = hint(metric_missing + also, free, shapes)
        if not any(related(n, free, shapes) for n in metric_missing):
            other = free[:MAX_KEYS]
            if other:
                text += "; the run logs " + ", ".join(repr(k) for k in other)
        if fix.mapping or fix.profile:
            text += f"; {fix.text()}"
        else:
            text += "; map its keys with metrics: {run_key: " + metric_missing[0] + "} or a metrics_profile"
    return text


def describe(
    cov: RunCoverage,
    keys: Iterable[str] = (),
    gaps: Mapping[str, str] | None = None,
    renames: Mapping[str, str] | None = None,
    silenced: Iterable[str] = (),
    shapes: Mapping[str, Shape] | None = None,
) -> Blind | None:
    """The run's blindness, all of it (the run's summary), or None when it sees. ``keys``: what the run
    logs (as logged); ``gaps``: input -> why a source found nothing for it; ``silenced``: inputs whose
    stopping another alert (an ``absent`` rule) already reports; ``shapes``: what the run's keys look
    like (``monitor.profiles.shape``), to suggest only keys of the right kind."""
    missing = _missing(cov, silenced)
    if not missing:
        return None
    text = _text(cov, {n: r for n, (r, _) in missing.items()}, list(keys), gaps or {}, renames, shapes)
    return Blind(cov.run, ",".join(sorted(missing)), text)


def causes(
    cov: RunCoverage,
    keys: Iterable[str] = (),
    gaps: Mapping[str, str] | None = None,
    renames: Mapping[str, str] | None = None,
    silenced: Iterable[str] = (),
    shapes: Mapping[str, Shape] | None = None,
) -> list[Blind]:
    """The run's blindness by cause, each its own alert: one per essential input the run never sent or
    stopped sending, and one for the optional inputs that stopped (an optional input never sent is no
    blindness: coverage shows it as ``unused``)."""
    missing = _missing(cov, silenced)
    keys = list(keys)
    out = []
    rest = {n: r for n, (r, essential) in missing.items() if not essential}
    for name, (rules, essential) in missing.items():
        if essential:
            out.append(
                Blind(cov.run, name, _text(cov, {name: rules}, keys, gaps or {}, renames, shapes), name)
            )
    if rest:
        out.append(
            Blind(cov.run, ",".join(sorted(rest)), _text(cov, rest, keys, gaps or {}, renames, shapes))
        )
    return out


def absent_watched(rules: Iterable[tuple[RuleSpec, object]]) -> set[str]:
    """Metrics whose stopping an ``absent`` rule of the run already reports (its own alert)."""
    return {rule.metric for rule, _ in rules if isinstance(rule, AbsentSpec) and rule.metric}


def _labels(watch: str, cause: str | None, scope: Mapping[str, str] | None = None) -> dict[str, str]:
    labels = {**(scope or {}), "watch": watch}
    if cause is not None:
        labels[INPUT] = cause
    return labels


def run_finding(blind: Blind | None, watch: str) -> Finding:
    """The run's ``watching_blind`` finding for one cause (``blind.input``) or for its other inputs."""
    if blind is None:
        return Finding(False, reason="every rule gets its inputs", extra_labels=_labels(watch, None))
    return Finding(True, reason=blind.text, extra_labels=_labels(watch, blind.input))


def run_findings(blinds: Iterable[Blind], watch: str, open_causes: Iterable[str]) -> list[Finding]:
    """One finding per cause: each essential input blind now, each cause still open (``open_causes``:
    the ``input`` labels of the scope's open ``watching_blind`` alerts) that is not (it resolves), and
    the run's other inputs (firing or not)."""
    blinds = list(blinds)
    now = {b.input for b in blinds if b.input is not None}
    out = [run_finding(b, watch) for b in blinds]
    out += [
        Finding(False, reason=f"{_name(c)} arrives", extra_labels=_labels(watch, c))
        for c in sorted(set(open_causes) - now)
    ]
    if not any(b.input is None for b in blinds):
        out.append(run_finding(None, watch))
    return out


def open_causes(evaluator: Evaluator, scope: str) -> list[str]:
    """The essential inputs an open ``watching_blind`` alert of ``scope`` (a run or a watch) is about."""
    return [
        a.key.labels[INPUT]
        for a in evaluator.open_alerts(scope)
        if a.key.rule.name == NAME and INPUT in a.key.labels
    ]


def apply(evaluator: Evaluator, scope: str, findings: Iterable[Finding], now: float) -> list[AlertEvent]:
    """Step the scope's ``watching_blind`` alerts through the lifecycle, one per finding."""
    rule = blind_rule()
    return [e for f in findings if (e := evaluator.apply(rule, scope, f, now)) is not None]


def _watch_text(n: int, running: int, alike: list[str], example: Blind) -> str:
    listed = ", ".join(alike[:MAX_RUNS]) + (
        f" and {len(alike) - MAX_RUNS} more" if len(alike) > MAX_RUNS else ""
    )
    return f"{n} of {running} running runs watched blind ({listed}). {example.run}: {example.text}"


def watch_findings(
    watch: str, running: int, blinds: Iterable[Blind], open_causes: Iterable[str]
) -> list[Finding]:
    """The watch's findings: one per essential input most of its ``running`` runs are blind on (one
    message for the watch and cause, inhibiting the runs' own), the causes still open that are not,
    and the most common blindness of their other inputs (``watch_finding``)."""
    blinds = list(blinds)
    out: list[Finding] = []
    common: set[str] = set()
    for cause in sorted({b.input for b in blinds if b.input is not None}):
        alike = sorted(b.run for b in blinds if b.input == cause)
        n = len(alike)
        if running >= 2 and n >= 2 and 2 * n > running:
            example = next(b for b in blinds if b.input == cause)
            labels = _labels(watch, cause, SCOPE)
            out.append(
                Finding(
                    True, value=float(n), reason=_watch_text(n, running, alike, example), extra_labels=labels
                )
            )
            common.add(cause)
    out += [
        Finding(False, reason="no common blindness", extra_labels=_labels(watch, c, SCOPE))
        for c in sorted(set(open_causes) - common)
    ]
    out.append(watch_finding(watch, running, [b for b in blinds if b.input is None]))
    return out


def watch_finding(watch: str, running: int, blinds: Iterable[Blind]) -> Finding:
    """One alert for the watch when most of its ``running`` runs are blind for the same reason."""
    blinds = list(blinds)
    labels = {**SCOPE, "watch": watch}
    if not blinds or running < 2:
        return Finding(False, reason="no common blindness", extra_labels=labels)
    reason, n = Counter(b.reason for b in blinds).most_common(1)[0]
    if n < 2 or 2 * n <= running:
        return Finding(False, reason="no common blindness", extra_labels=labels)
    alike = sorted(b.run for b in blinds if b.reason == reason)
    example = next(b for b in blinds if b.reason == reason)
    text = _watch_text(n, running, alike, example)
    others = sorted(b.run for b in blinds if b.reason != reason)
    if others:
        text += f". Blind for other reasons: {', '.join(others[:MAX_RUNS])}"
    return Finding(True, value=float(n), reason=text, extra_labels=labels)
