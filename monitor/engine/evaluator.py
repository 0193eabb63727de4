"""Rules x runs -> alert transitions. Pure: samples and ``now`` in, events out; no I/O.

The engine cycle feeds it what the sources read and persists what it returns; ``herowatch replay``
and ``herowatch rules test`` drive the very same object with a simulated clock.

The hot path is event-driven, so that replaying a million samples stays close to the cost of
parsing them:

- a sample goes only to the detectors that asked for its metrics (``Detector.inputs``), through a
  dispatch plan cached per set of metric names; a sample older than the run's newest that brings
  no new step (a source re-delivering rows) is dropped: it is not a rewind, and not news;
- ``evaluate(run, now)`` looks only at detectors that turned ``hot`` since the last evaluation,
  clocked detectors whose ``wake_at`` has come, and rules with a pending or firing alert that can
  change now (``Detector.holds_until``, the ``for`` of a pending alert). Every other detector
  promised that evaluating it could change nothing. Tests check this against evaluating every rule
  at every tick.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass, field, replace

from alerts.lifecycle import AlertStatus, Transition, advance
from alerts.model import AlertState, Finding, Severity, fingerprint
from monitor.rules.base import Detector
from monitor.rules.kinds import DETECTORS
from monitor.rules.spec import RuleSpec
from monitor.samples import Sample


@dataclass(frozen=True)
class AlertKey:
    rule: RuleSpec
    run: str
    labels: Mapping[str, str]
    fingerprint: str

    @property
    def severity(self) -> Severity:
        return self.rule.severity


@dataclass(frozen=True)
class AlertEvent:
    """An alert changed state: what, for which run, why, and its status after the change."""

    key: AlertKey
    transition: Transition
    status: AlertStatus | None  # None: a pending alert went back to inactive
    finding: Finding
    annotations: Mapping[str, str]


@dataclass(eq=False)
class _Slot:
    """One rule's detector for one run, and the alert instances it has open."""

    index: int
    rule: RuleSpec
    det: Detector
    queued: bool = False
    open: dict[str, AlertKey] = field(default_factory=dict)  # fingerprint -> key, pending or firing


_Feed = tuple[Callable[[Sample], None], Detector, _Slot]  # (bound observe, detector, slot)


@dataclass(eq=False)
class _RunRules:
    slots: list[_Slot]
    every: list[_Feed]  # detectors fed every sample
    by_metric: dict[str, list[_Feed]]  # metric -> detectors fed samples that carry it
    clocked: list[_Slot]
    dirty: list[_Slot] = field(default_factory=list)
    live: dict[int, _Slot] = field(default_factory=dict)  # slots with open alerts, by index
    synced: int = -1  # the ActiveAlerts version last reconciled with the slots' open alerts
    newest: float = -math.inf  # the newest sample time seen
    top_step: float = -math.inf  # the highest step seen
    plans: dict[tuple[str, ...], list[_Feed]] = field(default_factory=dict)

    def plan(self, names: tuple[str, ...]) -> list[_Feed]:
        """The detectors a sample with these metric names goes to, in rule order (leaders first).

        Cached per key set: a run's rows mostly carry the same metrics step after step."""
        feeds = {id(f): f for f in self.every}
        for name in names:
            for f in self.by_metric.get(name, ()):
                feeds[id(f)] = f
        plan = sorted(feeds.values(), key=lambda f: f[2].index)
        if len(self.plans) >= MAX_PLANS:
            self.plans.clear()
        self.plans[names] = plan
        return plan

    @property
    def detectors(self) -> list[tuple[RuleSpec, Detector]]:
        return [(s.rule, s.det) for s in self.slots]


class ActiveAlerts(dict):
    """fingerprint -> status of the open (pending or firing) alerts. A dict that counts changes made
    from outside (the engine restores alerts after a restart), so the evaluator can pick them up."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)
        self.version = 0

    def __setitem__(self, key: str, value: AlertStatus) -> None:
        super().__setitem__(key, value)
        self.version += 1

    def __delitem__(self, key: str) -> None:
        super().__delitem__(key)
        self.version += 1

    def pop(self, key: str, *default: object) -> object:
        if key in self:
            self.version += 1
        return super().pop(key, *default)

    def popitem(self) -> tuple[str, AlertStatus]:
        self.version += 1
        return super().popitem()

    def setdefault(self, key: str, default: AlertStatus | None = None) -> object:
        if key not in self:
            self.version += 1
        return super().setdefault(key, default)

    def update(self, *args: object, **kwargs: object) -> None:
        super().update(*args, **kwargs)
        self.version += 1

    def clear(self) -> None:
        super().clear()
        self.version += 1


def _numbers_only(sample: Sample) -> Sample:
    """The sample with its metric values as floats; values that are no number (None, "abc") left out."""
    metrics = {}
    for name, value in sample.metrics.items():
        try:
            metrics[name] = float(value)
        except (TypeError, ValueError, OverflowError):
            continue
    return replace(sample, metrics=metrics)


_INACTIVE = Finding(False, reason="the alert's labels changed")
MAX_PLANS = 256


class Evaluator:
    def __init__(
        self,
        rules_for_run: Callable[[str], Iterable[RuleSpec]],
        labels_for_run: Callable[[str], Mapping[str, str]] = lambda run: {},
    ) -> None:
        self._rules_for_run = rules_for_run
        self._labels_for_run = labels_for_run
        self._runs: dict[str, _RunRules] = {}
        self._active = ActiveAlerts()  # fingerprint -> pending or firing status
        self._fp_cache: dict[tuple[tuple[str, str], ...], str] = {}

    @property
    def active(self) -> ActiveAlerts:
        """fingerprint -> status of every open alert. Others may add (restore) or remove entries."""
        return self._active

    @active.setter
    def active(self, value: dict[str, AlertStatus]) -> None:
        self._active = value if isinstance(value, ActiveAlerts) else ActiveAlerts(value)

    # ---- runs ------------------------------------------------------------------------------
    def _run(self, run: str) -> _RunRules:
        rr = self._runs.get(run)
        if rr is None:
            slots = [
                _Slot(i, spec, DETECTORS[spec.kind](spec, run))
                for i, spec in enumerate(self._rules_for_run(run))
            ]
            every: list[_Feed] = []
            by_metric: dict[str, list[_Feed]] = {}
            clocked: list[_Slot] = []
            for slot in slots:
                wants = slot.det.inputs()
                feed = (slot.det.observe, slot.det, slot)
                if wants is None or len(wants) > 1:  # several metrics: fed every sample, observed once
                    every.append(feed)
                else:
                    for name in wants:
                        by_metric.setdefault(name, []).append(feed)
                if slot.det.clocked:
                    clocked.append(slot)
            leaders: dict[Hashable, Detector] = {}
            for slot in slots:
                share = slot.det.share_key()
                if share is not None:
                    if share in leaders:
                        slot.det.share_with(leaders[share])  # fed after its leader: same list, later index
                    else:
                        leaders[share] = slot.det
            rr = _RunRules(slots, every, by_metric, clocked)
            rr.dirty = list(slots)  # evaluate everything once
            for slot in slots:
                slot.queued = True
            self._runs[run] = rr
        return rr

    def runs(self) -> list[str]:
        return list(self._runs)

    def forget(self, run: str) -> None:
        """Drop the run's detectors. Its open alerts stay in ``active`` (and are picked up again)."""
        self._runs.pop(run, None)

    def detectors(self, run: str) -> list[tuple[RuleSpec, Detector]]:
        return self._run(run).detectors

    def stats(self, run: str) -> dict[str, dict[str, float | int | None]]:
        """Per rule, the figures its detector publishes (e.g. a spike rule's latest score)."""
        out = {}
        for slot in self._run(run).slots:
            figures = slot.det.stats()
            if figures:
                out[slot.rule.name] = dict(figures)
        return out

    def spike_score(self, run: str) -> float | None:
        """The highest latest spike score over the run's spike rules (None while warming up)."""
        scores = [
            s for rule, det in self.detectors(run) if rule.kind == "spike" and (s := det.score) is not None
        ]
        return max(scores) if scores else None

    def alerts(self, run: str | None = None) -> list[tuple[AlertKey, AlertStatus]]:
        """The open (pending or firing) alerts, of one run or all."""
        out = []
        names = [run] if run is not None and run in self._runs else []
        if run is None:
            names = list(self._runs)
        for name in names:
            rr = self._runs[name]
            if rr.synced != self._active.version:
                self._resync(rr, name)
            for slot in rr.live.values():
                for fp, key in slot.open.items():
                    out.append((key, self.active[fp]))
        return out

    def quiet_until(self, run: str) -> float:
        """Before this time, evaluating ``run`` without new samples cannot produce an event."""
        rr = self._run(run)
        if rr.dirty or rr.synced != self._active.version:
            return -math.inf
        quiet = min((s.det.wake_at for s in rr.clocked if not s.open), default=math.inf)
        for slot in rr.live.values():
            quiet = min(quiet, self._due(slot))
        return quiet

    # ---- samples ---------------------------------------------------------------------------
    def observe(self, sample: Sample) -> None:
        rr = self._runs.get(sample.run)
        if rr is None:
            rr = self._run(sample.run)
        step = sample.step
        if sample.t < rr.newest:
            if step is None or step <= rr.top_step:
                return  # re-delivered or late: the run is already past it (not a rewind, not news)
        else:
            rr.newest = sample.t
        if step is not None and step > rr.top_step:
            rr.top_step = step
        names = tuple(sample.metrics)
        plan = rr.plans.get(names)
        if plan is None:
            plan = rr.plan(names)
        for observe, det, slot in plan:
            try:
                observe(sample)
            except (TypeError, ValueError, ArithmeticError):
                observe(_numbers_only(sample))  # a source bug: a str where a number belongs
            if det.hot and not slot.queued:
                slot.queued = True
                rr.dirty.append(slot)
        if rr.live:  # an open alert: this sample may have ended it (wherever it went: cheap, rare)
            for slot in rr.live.values():
                if not slot.queued:
                    slot.queued = True
                    rr.dirty.append(slot)

    # ---- evaluation ------------------------------------------------------------------------
    def key(self, rule: RuleSpec, run: str, finding: Finding | None = None) -> AlertKey:
        labels = {
            **self._labels_for_run(run),
            **rule.labels,
            "alertname": rule.name,
            "run": run,
            "severity": rule.severity.value,
        }
        if rule.metric:
            labels["metric"] = rule.metric
        if finding is not None and finding.extra_labels:
            labels.update(finding.extra_labels)
        cache_key = tuple(labels.items())
        fp = self._fp_cache.get(cache_key)
        if fp is None:
            if len(self._fp_cache) > 100_000:
                self._fp_cache.clear()
            fp = self._fp_cache[cache_key] = fingerprint(labels)
        return AlertKey(rule, run, labels, fp)

    def _due(self, slot: _Slot) -> float:
        """When a rule with open alerts must be evaluated again, if no sample comes before.

        A firing alert whose condition cannot end before ``holds_until`` is left alone till then; a
        pending one is looked at again when its ``for`` is up. Not with ``keep_firing_for``: its
        clock runs from the last evaluation at which the condition held, so every tick counts."""
        rule = slot.rule
        if rule.keep_firing_for:
            return -math.inf
        due = slot.det.holds_until()
        for fp in slot.open:
            status = self._active.get(fp)
            if status is None:
                return -math.inf
            if status.state is AlertState.PENDING:
                due = min(due, status.active_at + rule.for_)
        return due

    def _resync(self, rr: _RunRules, run: str) -> None:
        """Adopt open alerts that were put into ``active`` from outside, drop those taken out."""
        active = self._active
        for slot in rr.slots:
            for fp in [fp for fp in slot.open if fp not in active]:
                del slot.open[fp]
            key = self.key(slot.rule, run)
            if key.fingerprint in active and key.fingerprint not in slot.open:
                slot.open[key.fingerprint] = key
                if not slot.queued:  # a restored alert: look at its condition at the next evaluation
                    slot.queued = True
                    rr.dirty.append(slot)
            if slot.open:
                rr.live[slot.index] = slot
            else:
                rr.live.pop(slot.index, None)
        rr.synced = active.version

    def evaluate(self, run: str, now: float) -> list[AlertEvent]:
        rr = self._runs.get(run)
        if rr is None:
            rr = self._run(run)
        if rr.synced != self._active.version:
            self._resync(rr, run)
        todo = rr.dirty
        for slot in rr.clocked:  # (a clocked rule with open alerts is due by _due below)
            if now >= slot.det.wake_at and not slot.queued and not slot.open:
                slot.queued = True
                todo.append(slot)
        if rr.live:
            for slot in rr.live.values():
                if not slot.queued and now >= self._due(slot):
                    slot.queued = True
                    todo.append(slot)
        if not todo:
            return []
        rr.dirty = []
        if len(todo) > 1:
            todo.sort(key=lambda s: s.index)
        events: list[AlertEvent] = []
        for slot in todo:
            slot.queued = False
            self._evaluate_slot(rr, slot, run, now, events)
        return events

    def _evaluate_slot(
        self, rr: _RunRules, slot: _Slot, run: str, now: float, events: list[AlertEvent]
    ) -> None:
        finding = slot.det.evaluate(now)
        if not finding.active and not slot.open:
            return
        rule = slot.rule
        current = self.key(rule, run, finding) if finding.active else None
        keys = dict(slot.open)
        if current is not None:
            keys.setdefault(current.fingerprint, current)
        for fp, key in keys.items():
            f = finding if current is None or fp == current.fingerprint else _INACTIVE
            active = self._active
            status, transition = advance(active.get(fp), f, now, rule.for_, rule.keep_firing_for)
            # our own changes keep the slots in step: dict's methods leave the version alone
            if status is not None and status.state.active:
                dict.__setitem__(active, fp, status)
                slot.open[fp] = key
            elif fp in active:
                dict.__delitem__(active, fp)
                slot.open.pop(fp, None)
            else:
                slot.open.pop(fp, None)
            if transition is not None:
                events.append(AlertEvent(key, transition, status, f, self.annotations(rule, run, f)))
        if slot.open:
            rr.live[slot.index] = slot
        else:
            rr.live.pop(slot.index, None)

    def apply(self, rule: RuleSpec, run: str, finding: Finding, now: float) -> AlertEvent | None:
        """Step one alert whose finding comes from outside the detectors (herowatch's own source health)
        through the same lifecycle and the same active set."""
        key = self.key(rule, run, finding)
        status, tr = advance(self.active.get(key.fingerprint), finding, now, rule.for_, rule.keep_firing_for)
        if status is not None and status.state.active:
            self.active[key.fingerprint] = status
        else:
            self.active.pop(key.fingerprint, None)
        return (
            None if tr is None else AlertEvent(key, tr, status, finding, self.annotations(rule, run, finding))
        )

    @staticmethod
    def annotations(rule: RuleSpec, run: str, finding: Finding) -> dict[str, str]:
        values = {
            "run": run,
            "value": finding.value,
            "threshold": finding.threshold,
            "step": finding.step,
            "reason": finding.reason,
        }
        out = {k: rule.render(k, **values) for k in rule.annotations}
        out.setdefault("summary", f"{run}: {rule.name}: {finding.reason}")
        return out
