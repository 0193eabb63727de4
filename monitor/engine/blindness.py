"""``watching_blind``: herowatch's own warning that a run's rules cannot see, one for the live engine and
for replay.

One alert per run names all of its blind rules, the inputs they miss and what the run does send that
looks related, with the fix ("map them with metrics: {...} or a metrics_profile"); an input a source
queried without result says why (a Prometheus query with no series: the query, and the labels the
metric has). When most running runs of a watch are blind for the same reason, one alert on the watch
lists them, and inhibits the runs' own (the default ``inhibit_rules``): one message, not fifty. The
alert is a warning, routed like any other, and resolves when the inputs arrive. Its fingerprint does
not depend on which inputs are missing: more rules going blind updates its text, it does not page
again.
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import ClassVar, Literal

from alerts.model import Finding, Severity
from monitor.durations import format_duration
from monitor.engine.coverage import RunCoverage
from monitor.profiles.suggest import hint, related, unused_keys
from monitor.rules.absent import AbsentSpec
from monitor.rules.base import ANY, STATE, STEP
from monitor.rules.spec import RuleSpec

NAME = "watching_blind"
SCOPE = {"scope": "watch"}
# Most runs of a watch blind alike: the watch's one watching_blind message stands for theirs.
INHIBIT = (
    ['alertname="watching_blind"', 'scope="watch"'],
    ['alertname="watching_blind"', 'scope!="watch"'],
    ["watch"],
)
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
    """One run's blindness in words, and the reason key that tells runs blind alike."""

    run: str
    reason: str  # the missing inputs, sorted: runs with the same key are blind for the same reason
    text: str


def describe(
    cov: RunCoverage,
    keys: Iterable[str] = (),
    gaps: Mapping[str, str] | None = None,
    renames: Mapping[str, str] | None = None,
    silenced: Iterable[str] = (),
) -> Blind | None:
    """The run's blindness, or None when it sees. ``keys``: what the run logs (as logged); ``gaps``:
    input -> why a source found nothing for it; ``silenced``: inputs whose stopping another alert
    (an ``absent`` rule) already reports."""
    gaps = gaps or {}
    skip = set(silenced)
    missing = {
        name: rules
        for name, rules in cov.blind_inputs().items()
        if not (name in skip and (i := cov.input(name)) is not None and i.last_at is not None)
    }
    if not missing:
        return None
    keys = list(keys)
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
            near = related(name, keys)
            if near:
                part += "; the run logs " + ", ".join(repr(k) for k in near)
        parts.append(part)
    text = "; ".join(parts)
    metric_missing = [n for n in missing if n not in WORDS and n not in gaps]
    if metric_missing:
        fix = hint(metric_missing, keys)
        if not any(related(n, keys) for n in metric_missing):
            other = unused_keys(keys, used, renames)[:MAX_KEYS]
            if other:
                text += "; the run logs " + ", ".join(repr(k) for k in other)
        if fix.mapping or fix.profile:
            text += f"; {fix.text()}"
        else:
            text += "; map its keys with metrics: {run_key: " + metric_missing[0] + "} or a metrics_profile"
    return Blind(cov.run, ",".join(sorted(missing)), text)


def absent_watched(rules: Iterable[tuple[RuleSpec, object]]) -> set[str]:
    """Metrics whose stopping an ``absent`` rule of the run already reports (its own alert)."""
    return {rule.metric for rule, _ in rules if isinstance(rule, AbsentSpec) and rule.metric}


def run_finding(blind: Blind | None, watch: str) -> Finding:
    labels = {"watch": watch}
    if blind is None:
        return Finding(False, reason="every rule gets its inputs", extra_labels=labels)
    return Finding(True, reason=blind.text, extra_labels=labels)


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
    listed = ", ".join(alike[:MAX_RUNS]) + (
        f" and {len(alike) - MAX_RUNS} more" if len(alike) > MAX_RUNS else ""
    )
    text = f"{n} of {running} running runs watched blind ({listed}). {example.run}: {example.text}"
    others = sorted(b.run for b in blinds if b.reason != reason)
    if others:
        text += f". Blind for other reasons: {', '.join(others[:MAX_RUNS])}"
    return Finding(True, value=float(n), reason=text, extra_labels=labels)
