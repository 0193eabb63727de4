"""Rules x runs -> alert transitions. Pure: samples and ``now`` in, events out; no I/O.

The engine cycle feeds it what the sources read and persists what it returns; ``herowatch replay``
and ``herowatch rules test`` drive the very same object with a simulated clock.

The evaluator owns the state of every open (pending or firing) alert. Changes from outside go through
its methods: ``restore`` (an alert read back from storage after a restart), ``drop`` (a run handed
over to another replica), ``set_ref`` (the storage id of an instance), ``apply`` (a finding that comes
from herowatch itself, such as source health), ``export_state``/``import_state`` (detector snapshots).

The hot path is event-driven, so that replaying a million samples stays close to the cost of parsing them:

- a sample goes only to the detectors that asked for its metrics (``Detector.inputs``), through a
  dispatch plan cached per set of metric names; a sample older than the run's newest that brings
  no new step (a source re-delivering rows) is dropped: it is not a rewind, and not news;
- ``evaluate(run, now)`` looks only at detectors that turned ``hot`` since the last evaluation,
  clocked detectors whose ``wake_at`` has come, and rules with a pending or firing alert that can
  change now (``Detector.holds_until``, the ``for`` of a pending alert).

Outages: ``evaluate(run, now, unavailable)`` leaves alone every rule whose data comes only from an
unreadable source (its alerts neither fire nor resolve, ``Detector.feeds``); nothing that another
source delivers changes that. ``settling`` (source -> since when it answers again, when its outage began)
holds the silence rules too until the run's newest step is that recent (the backlog arrived), unless the
silence began clearly before the outage: ``RunRules.settling``, ``source_health.waits_for_backlog``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence

from alerts.lifecycle import AlertStatus, advance
from alerts.model import AlertState, Finding, fingerprint
from monitor.engine.alert_events import AlertEvent, AlertKey, OpenAlert, held
from monitor.engine.alert_naming import AlertNaming
from monitor.engine.coverage import LOOK_GRACE, RunCoverage, judge
from monitor.engine.run_rules import RunRules, Settling, Slot
from monitor.engine.segment import feed_segment
from monitor.rules.columns import Batch, feeding
from monitor.rules.spec import OWN_KINDS, RuleSpec
from monitor.rules.spike import SpikeSpec
from monitor.samples import RunState, Sample

_INACTIVE = Finding(False, reason="the alert's labels changed")
_GONE = Finding(False, reason="the rule is no longer configured")


class Evaluator:
    def __init__(
        self,
        rules_for_run: Callable[[str], Iterable[RuleSpec]],
        labels_for_run: Callable[[str], Mapping[str, str]] = lambda run: {},
        title_for_run: Callable[[str], str] = lambda run: run,
    ) -> None:
        self._rules_for_run = rules_for_run
        self.naming = AlertNaming(labels_for_run, title_for_run)  # alert labels and texts of a run
        self._runs: dict[str, RunRules] = {}
        self._open: dict[str, OpenAlert] = {}  # fingerprint -> the open instance
        self._vouched: tuple[Sequence[Sample], tuple[str, ...]] | None = None  # vouch_names

    # ---- runs ------------------------------------------------------------------------------
    def _run(self, run: str) -> RunRules:
        rr = self._runs.get(run)
        if rr is None:
            rr = self._runs[run] = RunRules.build(self._rules_for_run(run), run)
        return rr

    def drop(self, run: str) -> None:
        """Forget a run: its detectors and its open alerts (another replica watches it now)."""
        self._runs.pop(run, None)
        for fp in [fp for fp, a in self._open.items() if a.key.run == run]:
            del self._open[fp]

    def detectors(self, run: str) -> list[tuple[RuleSpec, object]]:
        return [(s.rule, s.det) for s in self._run(run).slots]

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
        spikes = [det for rule, det in self.detectors(run) if isinstance(rule, SpikeSpec)]
        scores = [s for det in spikes if (s := det.score) is not None]
        return max(scores) if scores else None

    # ---- open alerts ---------------------------------------------------------------------------
    def open_alerts(self, run: str | None = None) -> list[OpenAlert]:
        return [a for a in self._open.values() if run is None or a.key.run == run]

    def alerts(self, run: str | None = None) -> list[tuple[AlertKey, AlertStatus]]:
        """The open (pending or firing) alerts, of one run or all."""
        return [(a.key, a.status) for a in self.open_alerts(run)]

    def is_open(self, fp: str) -> bool:
        return fp in self._open

    def set_ref(self, fp: str, ref: int) -> None:
        alert = self._open.get(fp)
        if alert is not None:
            alert.ref = ref

    def restore(
        self,
        run: str,
        rule: str,
        labels: Mapping[str, str],
        status: AlertStatus,
        ref: int | None,
        kind: str = "",
    ) -> None:
        """Adopt an open alert read back from storage (``kind``: its rule's, as stored). Its detector is seen
        again at the next evaluation; until its state is known (``import_state``) it may not resolve."""
        rr = self._run(run)
        fp = fingerprint(labels)
        slot = rr.slot_named(rule)
        spec = slot.rule if slot is not None else None
        key = AlertKey(spec, run, dict(labels), fp) if spec is not None else None
        if key is None:  # herowatch's own alerts (source health), or a rule gone from the config
            existing = self._open.get(fp)
            orphan = AlertKey(RuleSpec(name=rule, kind="orphan"), run, dict(labels), fp)
            key = existing.key if existing is not None else orphan
            if kind not in OWN_KINDS:  # herowatch's own rules are applied again at every poll
                rr.orphans.add(fp)
        self._open[fp] = OpenAlert(key, status, ref, cold=slot is not None and not slot.fed)
        if slot is not None:
            slot.opened(fp)
            rr.live[slot.index] = slot
            rr.queue(slot)

    # ---- samples ---------------------------------------------------------------------------
    def observe(self, sample: Sample) -> None:
        rr = self._runs.get(sample.run)
        if rr is None:
            rr = self._run(sample.run)
        if sample.source_error is not None:
            return  # an outage is the caller's to tell (``evaluate(..., unavailable)``), not news
        step = sample.step
        t = sample.t
        names = tuple(sample.metrics)
        was = rr.arrivals.state
        rr.arrivals.observe(t, names, step, sample.state)
        if was == RunState.FINISHED and rr.arrivals.state != was:  # it resumed: every rule judges again
            for slot in rr.slots:
                rr.queue(slot)
        if t < rr.newest:
            if step is None or step <= rr.top_step:
                return  # re-delivered or late: the run is already past it (not a rewind, not news)
        else:
            rr.newest = t
        if step is not None and step > rr.top_step:
            rr.top_step = step
        if sample.source is not None:
            rr.provided(sample, names)
        plan = rr.plans.get(names)
        if plan is None:
            plan = rr.plan(names)  # (marks its slots fed: they are fed right below)
        for slot in plan:
            det = slot.det
            det.observe(sample)
            if det.hot and not slot.queued:
                slot.queued = True
                rr.dirty.append(slot)
        if rr.live:  # an open alert: this sample may have ended it (wherever it went: cheap, rare)
            for slot in rr.live.values():
                rr.queue(slot)

    def observe_segment(self, run: str, samples: Sequence[Sample], i: int, j: int) -> list[AlertEvent]:
        """Replay's batched path: ``samples[i:j]`` of ``run`` (no state, no source error, time never
        going back), with ``evaluate(run, t)`` at each sample time but the last, as ``observe`` one
        by one would; only the evaluations that can find something are made (``engine.segment``)."""
        rr = self._runs.get(run) or self._run(run)
        vouched = self._vouched
        names = vouched[1] if vouched is not None and vouched[0] is samples else None
        return feed_segment(rr, samples, i, j, lambda now: self.evaluate(run, now), self.observe, names)

    def vouch_names(self, samples: Sequence[Sample] | None, names: tuple[str, ...] = ()) -> None:
        """The caller vouches that every sample of ``samples`` carries the metric names ``names`` (in
        some order): ``observe_segment`` over this very sequence then takes them from here rather than
        sample by sample (replay's batches: each sample has the keys of the one before it), and the
        detectors read the batch's metric columns, taken once for all (``rules.columns``). None: done."""
        self._vouched = (samples, names) if samples is not None else None
        feeding(Batch(samples, names) if isinstance(samples, list) else None)

    # ---- evaluation ------------------------------------------------------------------------
    def key(self, rule: RuleSpec, run: str, finding: Finding | None = None) -> AlertKey:
        return self.naming.key(rule, run, finding)

    def quiet_until(self, run: str) -> float:
        """Before this time, evaluating ``run`` without new samples cannot produce an event."""
        rr = self._run(run)
        if rr.dirty or rr.orphans:
            return -math.inf
        quiet = math.inf
        for det, slot in rr.clocks:
            if not slot.open and det.wake_at < quiet:
                quiet = det.wake_at
        for slot in rr.live.values():
            quiet = min(quiet, self._due(slot))
        return quiet

    def armed_until(self, run: str) -> float:
        """When a timer the data armed (a pending ``for``, a crash's grace; no silence timer) can fire."""
        rr, due = self._runs.get(run), math.inf
        for det, slot in rr.clocks if rr is not None else ():
            if not det.silence and not slot.open and det.wake_at > -math.inf:
                due = min(due, det.wake_at)
        for slot in rr.live.values() if rr is not None else ():
            for fp in slot.open:
                alert = self._open.get(fp)
                if alert is not None and alert.status.state is AlertState.PENDING:
                    due = min(due, alert.status.active_at + slot.rule.for_)
        return due

    def _due(self, slot: Slot) -> float:
        """When a rule with open alerts must be evaluated again, if no sample comes before.

        A firing alert whose condition cannot end before ``holds_until`` is left alone till then; a
        pending one is looked at again when its ``for`` is up. Not with ``keep_firing_for``: its
        clock runs from the last evaluation at which the condition held, so every tick counts."""
        rule = slot.rule
        if rule.keep_firing_for:
            return -math.inf
        due = slot.det.holds_until()
        for fp in slot.open:
            alert = self._open.get(fp)
            if alert is None or alert.cold:
                return -math.inf
            if alert.status.state is AlertState.PENDING:
                due = min(due, alert.status.active_at + rule.for_)
        return due

    def evaluate(
        self, run: str, now: float, unavailable: frozenset[str] = frozenset(), settling: Settling = None
    ) -> list[AlertEvent]:
        rr = self._runs.get(run)
        if rr is None:
            rr = self._run(run)
        events: list[AlertEvent] = []
        if rr.orphans:
            for fp in list(rr.orphans):
                rr.orphans.discard(fp)
                alert = self._open.get(fp)
                if alert is not None:
                    self._step(alert.key, _GONE, now, events)
        todo = rr.dirty
        for det, slot in rr.clocks:  # (a clocked rule with open alerts is due by _due below)
            if now >= det.wake_at and not slot.queued and not slot.open:
                slot.queued = True
                todo.append(slot)
        if rr.live:
            for slot in rr.live.values():
                if not slot.queued and now >= self._due(slot):
                    slot.queued = True
                    todo.append(slot)
        if not todo:
            return events
        rr.dirty = []
        if len(todo) > 1:
            todo.sort(key=lambda s: s.index)
        for slot in todo:
            if unavailable and rr.blind(slot, unavailable) or settling and rr.settling(slot, settling):
                rr.dirty.append(slot)  # frozen: looked at again once its source answers
                continue
            slot.queued = False
            self._evaluate_slot(rr, slot, run, now, events)
        return events

    def _evaluate_slot(
        self, rr: RunRules, slot: Slot, run: str, now: float, events: list[AlertEvent]
    ) -> None:
        finding = rr.judged(slot, slot.det.evaluate(now))
        if not finding.active and not slot.open:
            return
        current = self.key(slot.rule, run, finding) if finding.active and not finding.unknown else None
        fps = list(slot.open)
        if current is not None and current.fingerprint not in slot.open:
            fps.append(current.fingerprint)
        for fp in fps:
            alert = self._open.get(fp)
            key = current if alert is None else alert.key
            f = finding if current is None or fp == current.fingerprint else _INACTIVE
            if alert is not None and alert.cold and not f.active:
                if not (slot.fed and slot.det.ready(now)):
                    continue  # restarted without its state: not evidence that the condition ended
                alert.cold = False
            self._step(key, f, now, events)
            if fp in self._open:
                slot.opened(fp)
            else:
                slot.closed(fp)
        if slot.open:
            rr.live[slot.index] = slot
        else:
            rr.live.pop(slot.index, None)

    def _step(self, key: AlertKey, finding: Finding, now: float, events: list[AlertEvent]) -> None:
        """One lifecycle step of one alert instance; its event, if the state changed."""
        fp = key.fingerprint
        alert = self._open.get(fp)
        rule = key.rule
        status, tr = advance(alert.status if alert else None, finding, now, rule.for_, rule.keep_firing_for)
        ref = alert.ref if alert else None
        if status is not None and status.state.active:
            if alert is None:
                alert = self._open[fp] = OpenAlert(key, status)
            else:
                alert.status = status
            if finding.active:
                alert.said = finding
        else:
            self._open.pop(fp, None)
        if tr is not None:
            events.append(AlertEvent(key, tr, status, finding, self.annotations(rule, key.run, finding), ref))

    def apply(self, rule: RuleSpec, run: str, finding: Finding, now: float) -> AlertEvent | None:
        """Step one alert whose finding comes from outside the detectors (herowatch's own source health)
        through the same lifecycle and the same open alerts."""
        key = self.key(rule, run, finding)
        existing = self._open.get(key.fingerprint)
        if existing is not None and existing.key.rule.name == rule.name:
            key = AlertKey(rule, run, existing.key.labels, key.fingerprint)
        events: list[AlertEvent] = []
        self._step(key, finding, now, events)
        return events[0] if events else None

    def current(self, run: str, now: float) -> list[tuple[OpenAlert, Finding, Mapping[str, str]]]:
        """Firing alerts of a run with their annotations rendered from the detector's view at ``now``
        (Prometheus re-renders annotations at every evaluation: the text stays true)."""
        rr = self._runs.get(run)
        out: list[tuple[OpenAlert, Finding, Mapping[str, str]]] = []
        for slot in rr.live.values() if rr is not None else ():
            if slot.rule.momentary:  # a blip keeps the text it fired with (RuleSpec.momentary)
                continue
            finding = slot.det.evaluate(now)
            for fp in slot.open:
                alert = self._open.get(fp)
                if alert is None or alert.status.state is not AlertState.FIRING:
                    continue
                if finding.active:
                    out.append((alert, finding, self.annotations(slot.rule, run, finding)))
                elif not finding.unknown and alert.said is not None and alert.status.last_true_at is not None:
                    since = now - alert.status.last_true_at  # held by keep_firing_for: its text has an age
                    f = held(alert.said, finding, since, slot.rule.keep_firing_for)
                    out.append((alert, f, self.annotations(slot.rule, run, f)))
        return out

    def annotations(self, rule: RuleSpec, run: str, finding: Finding) -> dict[str, str]:
        return self.naming.annotations(rule, run, finding)

    # ---- coverage ------------------------------------------------------------------------------
    def coverage(
        self,
        run: str,
        now: float,
        unavailable: frozenset[str] = frozenset(),
        promised: frozenset[str] = frozenset(),
        run_kind: str | None = None,
        look_grace: float = LOOK_GRACE,
    ) -> RunCoverage:
        """Which of the run's rules can see at ``now`` (``engine.coverage``); ``look_grace``: how long
        after herowatch first looked for a queried input its absence counts (the watch's grace)."""
        rr = self._run(run)
        unread, plans = rr.unreadable(unavailable), rr.coverage_plans
        rr.arrivals.look(frozenset(n for n in promised if not n.startswith("@")), now)
        return judge(run, rr.coverage_rules, rr.arrivals, now, unread, promised, run_kind, plans, look_grace)

    # ---- detector state across restarts ----------------------------------------------------------
    def export_state(self, run: str) -> dict | None:
        """A snapshot of the run's detectors (``import_state`` resumes from it); None if unknown."""
        rr = self._runs.get(run)
        return rr.export_state() if rr is not None else None

    def import_state(self, run: str, data: Mapping | None) -> int:
        """Resume a run's detectors from a snapshot. Returns how many detectors took their state; their
        restored alerts may resolve again as soon as the condition ends."""
        rr = self._run(run)
        taken = rr.import_state(data)
        for fp in [fp for slot in rr.slots if slot.fed for fp in slot.open]:
            alert = self._open.get(fp)
            if alert is not None:
                alert.cold = False
        return taken
