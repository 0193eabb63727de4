"""One run's rules as the evaluator holds them: a detector per rule (a slot), the dispatch plan that
sends each sample only to the detectors that asked for its metrics, and which source provides what.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass, field

from alerts.model import Finding
from monitor.engine.arrivals import Arrivals
from monitor.engine.source_health import Settle, waits_for_backlog
from monitor.rules import snapshot
from monitor.rules.base import ANY, STATE, STEP, Detector
from monitor.rules.kinds import DETECTORS
from monitor.rules.spec import RuleSpec
from monitor.samples import RunState, Sample

MAX_PLANS = 256
# Of the per-run snapshot (RunRules.export_state). 2: windows as lists, spike baselines as arrays of
# doubles (2026-12-07). 3: long runs of floats packed as base64 doubles (``rules.snapshot_pack``). A
# version reads its own and older snapshots; an older version ignores a newer one (its runs start cold
# there: safe), so rolling back one release never runs old code on new forms.
STATE_VERSION = 3
READS_VERSIONS = frozenset({1, 2, 3})
SHARED_MAX = 4096  # rule sets whose coverage plans are shared (``_shared_coverage``)
# (id of each rule, its feeds) -> (coverage_rules, coverage_plans) shared by the runs with those rules
_SHARED: dict[tuple, tuple[list, dict]] = {}


_FROZEN: dict[frozenset[str], frozenset[str]] = {}


def interned(names: frozenset[str]) -> frozenset[str]:
    """One object for equal sets of names (a rule's feeds, the sources of a feed): the same few sets
    recur in every run, and each costs 216 bytes or more."""
    held = _FROZEN.get(names)
    if held is None:
        if len(_FROZEN) >= SHARED_MAX:
            _FROZEN.clear()
        held = _FROZEN[names] = frozenset(names)
    return held


def _shared_coverage(slots: list[Slot]) -> tuple[list, dict]:
    """The (RuleSpec, feeds) list and the ``coverage.judge`` plan cache of runs with these very rules:
    one for all the runs of a watch (a plan depends only on them and on the key ``judge`` files it
    under), not one a run. The entry holds the specs, so their ids are not reused while it lives."""
    key = tuple((id(slot.rule), slot.feeds) for slot in slots)
    held = _SHARED.get(key)
    if held is None:
        if len(_SHARED) >= SHARED_MAX:  # configs loaded again and again: start afresh
            _SHARED.clear()
        held = _SHARED[key] = ([(slot.rule, slot.feeds) for slot in slots], {})
    return held


# (id of each rule, its inputs) -> (the specs, kept so their ids stay theirs; slots fed every sample;
# metric -> slots fed the samples that carry it): one routing table for the runs of a watch
_ROUTES: dict[tuple, tuple[list, tuple[int, ...], dict[str, tuple[int, ...]]]] = {}


def _shared_routes(slots: list[Slot], wanted: list[frozenset[str] | None]) -> tuple:
    """Which slots each metric's samples go to, by slot index: the same for every run with these
    rules, so one table (a dict of ~20 metrics) serves them all instead of one per run."""
    key = tuple((id(slot.rule), wants) for slot, wants in zip(slots, wanted, strict=True))
    held = _ROUTES.get(key)
    if held is None:
        every: list[int] = []
        by_metric: dict[str, list[int]] = {}
        for slot, wants in zip(slots, wanted, strict=True):
            if wants is None or len(wants) > 1:  # several metrics: fed every sample, observed once
                every.append(slot.index)
            else:
                for name in wants:
                    by_metric.setdefault(name, []).append(slot.index)
        if len(_ROUTES) >= SHARED_MAX:
            _ROUTES.clear()
        rules = [slot.rule for slot in slots]
        held = _ROUTES[key] = (rules, tuple(every), {k: tuple(v) for k, v in by_metric.items()})
    return held


NOTHING_OPEN: frozenset[str] = frozenset()  # ``Slot.open`` until its first alert (most never have one)


@dataclass(eq=False, slots=True)
class Slot:
    """One rule's detector for one run, and the fingerprints of its open (pending or firing) alerts."""

    index: int
    rule: RuleSpec
    det: Detector
    feeds: frozenset[str]
    queued: bool = False
    fed: bool = False  # observed a sample since the detector was built
    leader: Detector | None = None  # shares this detector's statistics (share_key)
    open: set[str] | frozenset[str] = NOTHING_OPEN  # read it; change it by ``opened`` and ``closed``

    def opened(self, fp: str) -> None:
        if self.open is NOTHING_OPEN:
            self.open = {fp}
        else:
            self.open.add(fp)  # type: ignore[union-attr] - a set once an alert opened

    def closed(self, fp: str) -> None:
        if self.open:
            self.open.discard(fp)  # type: ignore[union-attr]


Settling = Mapping[str, Settle] | None  # sources that answer again -> since, outage began (source_health)


@dataclass(eq=False)
class RunRules:
    slots: list[Slot]  # by index (a plan lists slots: a tuple and a bound method a slot cost ~130 B)
    every: tuple[int, ...]  # slots fed every sample (shared by the runs with the same rules)
    by_metric: dict[str, tuple[int, ...]]  # metric -> slots fed samples that carry it (shared too)
    clocked: list[Slot]
    dirty: list[Slot] = field(default_factory=list)
    live: dict[int, Slot] = field(default_factory=dict)  # slots with open alerts, by index
    newest: float = -math.inf  # the newest sample time seen
    top_step: float = -math.inf  # the highest step seen
    plans: dict[tuple[str, ...], list[Slot]] = field(default_factory=dict)
    providers: dict[str, frozenset[str]] = field(default_factory=dict)  # feed -> sources that delivered it
    _provided: set[tuple] = field(default_factory=set)
    orphans: set[str] = field(default_factory=set)  # restored alerts of rules no longer configured
    arrivals: Arrivals = field(default_factory=lambda: Arrivals(frozenset()))  # coverage: what came when
    clocks: list[tuple[Detector, Slot]] = field(default_factory=list)  # ``clocked``, with their detectors
    splits: dict[int, tuple] = field(default_factory=dict)  # plan -> its free and synchronous feeds (segment)
    coverage_plans: dict = field(default_factory=dict)  # coverage.judge's plans (shared: same rules)
    coverage_rules: list = field(default_factory=list)  # (RuleSpec, feeds) per slot (shared), for judge

    @classmethod
    def build(cls, rules: Iterable[RuleSpec], run: str) -> RunRules:
        slots = []
        for i, spec in enumerate(rules):
            det = DETECTORS[spec.kind](spec, run)
            slots.append(Slot(i, spec, det, interned(det.feeds())))
        wanted = [None if (w := slot.det.inputs()) is None else frozenset(w) for slot in slots]
        _, every, by_metric = _shared_routes(slots, wanted)
        clocked: list[Slot] = []
        groups: dict[Hashable, list[Slot]] = {}
        for slot in slots:
            if slot.det.clocked:
                clocked.append(slot)
            share = slot.det.share_key()
            if share is not None:
                groups.setdefault(share, []).append(slot)
        hosts: dict[Hashable, Detector] = {}
        for group in groups.values():  # (in the order of their first rule)
            leader, ride = group[0].det, group[0].det.ride_key()
            host = hosts.get(ride) if ride is not None else None
            if host is not None and all(slot.det.may_ride() for slot in group):
                leader, followers = host, group  # rides an earlier group's leader (ride_key)
            else:
                followers = group[1:]
                if ride is not None:
                    hosts.setdefault(ride, leader)
            for slot in followers:  # fed after its leader: same list, later index
                slot.leader = leader
                slot.det.share_with(leader)
        rr = cls(slots, every, by_metric, clocked)
        rr.clocks = [(slot.det, slot) for slot in clocked]
        rr.arrivals = Arrivals(frozenset(f for slot in slots for f in slot.feeds))
        rr.coverage_rules, rr.coverage_plans = _shared_coverage(slots)
        rr.dirty = list(slots)  # evaluate everything once
        for slot in slots:
            slot.queued = True
        return rr

    def plan(self, names: tuple[str, ...]) -> list[Slot]:
        """The detectors a sample with these metric names goes to, in rule order (leaders first).

        Cached per key set: a run's rows mostly carry the same metrics step after step. The plan is
        asked for only to feed a sample through it at once: its slots are marked fed here, once, not
        at every sample."""
        plan = self.plans.get(names)
        if plan is not None:
            return plan
        chosen = set(self.every)
        by_metric = self.by_metric
        for name in names:
            chosen.update(by_metric.get(name, ()))
        slots = self.slots
        plan = [slots[i] for i in sorted(chosen)]
        for slot in plan:
            slot.fed = True
        if len(self.plans) >= MAX_PLANS:
            self.plans.clear()
        self.plans[names] = plan
        return plan

    def provided(self, sample: Sample, names: tuple[str, ...]) -> None:
        """Remember which source delivers which feed (cheap: once per shape of sample and source)."""
        shape = (sample.source, names, sample.step is not None, sample.state is not None)
        if shape in self._provided or sample.source is None:
            return
        if len(self._provided) < 4 * MAX_PLANS:
            self._provided.add(shape)
        source, providers = sample.source, self.providers
        feeds = (
            ANY,
            *((STEP,) if sample.step is not None else ()),
            *((STATE,) if sample.state is not None else ()),
            *names,
        )
        for feed in feeds:
            sources = providers.get(feed)
            if sources is None or source not in sources:
                providers[feed] = interned((sources or frozenset()) | {source})

    def blind(self, slot: Slot, unavailable: frozenset[str]) -> bool:
        """Is every source of one of the slot's feeds unreadable now?"""
        for feed in slot.feeds:
            sources = self.providers.get(feed)
            if sources and sources <= unavailable:
                return True
        return False

    def settling(self, slot: Slot, settling: Mapping[str, Settle]) -> bool:
        """Is the slot a silence rule (a stall) whose every source of a feed answers again only since a
        time (``settling``: source -> since) that the run's newest step has not reached yet? Then the
        backlog of steps may still be on its way: the run's progress is not judged yet (unless its
        silence began clearly before the outage, by the run's step cadence: ``waits_for_backlog``)."""
        if not slot.det.silence:
            return False
        shapes = self.arrivals.shapes.items()
        stepped = max((seen.last for (_, step), seen in shapes if step), default=-math.inf)
        for feed in slot.feeds:
            sources = self.providers.get(feed)
            if sources and sources <= settling.keys():
                if waits_for_backlog(stepped, self.arrivals.step_cadence(), (settling[s] for s in sources)):
                    return True
        return False

    def unreadable(self, unavailable: frozenset[str]) -> frozenset[str]:
        """The feeds whose every source cannot be read now."""
        if not unavailable:
            return frozenset()
        return frozenset(f for f, sources in self.providers.items() if sources and sources <= unavailable)

    def judged(self, slot: Slot, finding: Finding) -> Finding:
        """The slot's finding, unless the run finished: then its metrics no longer change and what they
        showed is no longer a condition of a live run (its open alerts resolve, none opens). A run that
        crashed, failed or was killed keeps its alerts: its last condition is part of what on-call acts
        on (a NaN before the crash). Rules about the run's end judge on."""
        if self.arrivals.state == RunState.FINISHED and finding.active and not slot.det.about_the_end:
            why = "the run finished: its metrics no longer change"
            return Finding(False, step=finding.step, reason=why)
        return finding

    def queue(self, slot: Slot) -> None:
        if not slot.queued:
            slot.queued = True
            self.dirty.append(slot)

    def slot_named(self, rule: str) -> Slot | None:
        return next((s for s in self.slots if s.rule.name == rule), None)

    # ---- the detectors' state across restarts ---------------------------------------------------
    def export_state(self) -> dict:
        detectors = {}
        with snapshot.sharing():  # the newest sample, held by most of them, encoded once
            for slot in self.slots:
                try:
                    detectors[slot.rule.name] = slot.det.export_state()
                except snapshot.SnapshotError:
                    continue  # that detector starts cold after a restart: safe, merely slower
        return {
            "v": STATE_VERSION,
            "newest": snapshot.encode(self.newest),
            "top_step": snapshot.encode(self.top_step),
            "providers": {k: sorted(v) for k, v in self.providers.items()},
            "arrivals": self.arrivals.export(),
            "detectors": detectors,
        }

    def import_state(self, data: Mapping | None) -> int:
        if not data or data.get("v") not in READS_VERSIONS:
            return 0
        taken = 0
        dets = data.get("detectors") or {}
        for slot in self.slots:
            state = dets.get(slot.rule.name)
            try:
                if state is not None and slot.det.import_state(state):
                    slot.fed = True
                    taken += 1
            except (snapshot.SnapshotError, TypeError, ValueError, KeyError, AttributeError):
                continue
        for slot in self.slots:  # followers share their leader's (restored) statistics again
            if slot.leader is not None:
                slot.det.share_with(slot.leader)
        try:
            self.newest = float(snapshot.decode(data.get("newest", -math.inf)))
            self.top_step = float(snapshot.decode(data.get("top_step", -math.inf)))
        except (snapshot.SnapshotError, TypeError, ValueError):
            pass
        self.arrivals.restore(data.get("arrivals"))
        for feed, sources in (data.get("providers") or {}).items():
            have = self.providers.get(feed) or frozenset()
            self.providers[feed] = interned(have | {str(s) for s in sources})
        for slot in self.slots:
            self.queue(slot)
        return taken
