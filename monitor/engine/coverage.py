"""Coverage: per run and input, when a value last arrived; per rule, whether it can see.

Every rule declares its inputs (``Detector.feeds``: metric names, the step clock ``STEP``, the run state
``STATE``, any data ``ANY``). ``arrivals.Arrivals`` (kept by ``RunRules``, saved with the detector
state) records for each input of the run its first and last arrival and its recent gaps. ``judge``
turns that, at ``now``, into a state per rule and input, learned from the run itself:

- ``covered``  the input arrives (or came, and has not stopped for long);
- ``warming``  the run is young: it has logged fewer than ``MIN_ROWS`` steps since it was first seen
  (or, with no step clock, rows), or the input is expected only at evals or saves and none came yet,
  or it is a queried input (Prometheus) herowatch first looked for less than ``LOOK_GRACE`` ago (a
  Prometheus that just started has no series before its first scrapes, whatever the run's history);
- ``blind``    the run is running and an input it needs never arrived though the run is past warming,
  or the input stopped for far longer than its own cadence (``STOP_FACTOR`` x its median gap, and at
  least twice its longest recent gap) while the run went on logging;
- ``unknown``  every source that delivers the input cannot be read now (``source_unavailable`` says so);
- ``unused``   the input is not expected of this run: it is optional and the run never logged it, or
  it is the step clock / state and no source of the watch provides them;
- ``ended``    the run finished, crashed or was killed: nothing more is expected.

Which inputs a run must send is what the packs declare important (``inputs:`` in a pack or rule file,
``RuleSpec.importance``): an ``essential`` input (the training loss) when a trainer's tracker feeds the
run (a source promises its steps, or steps arrive: a Prometheus-only watch is not expected to send a
loss), an input essential ``where queried`` (the OOM and restart counters) when a source of the watch
queries it (``promised``, e.g. its Prometheus aliases), a rule's metric that says ``expect: always``,
and the step clock and state when a source provides them. Every other input is optional: never
arriving is shown (``unused``), never blindness; stopping is blindness whatever the importance.
Pure: no I/O, no clock.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from monitor.durations import format_duration
from monitor.engine.arrivals import Arrivals, Seen
from monitor.rules.base import ANY, STATE, STEP
from monitor.samples import TERMINAL_STATES

MIN_ROWS = 20  # logged steps (or rows) without an input before it counts as never sent
# A queried input (Prometheus) has no history before its first scrape: it counts as never sent only
# this long after herowatch first looked for it (``Arrivals.look``), whatever the run logged before: the
# watch's own ``unavailable_after`` (the grace it gives a source), and never less than one scrape at
# Prometheus's default interval (FIRST_SCRAPE). LOOK_GRACE: where no watch says (replay, doctor).
FIRST_SCRAPE = 60.0
LOOK_GRACE = 300.0
SPECIAL = (STEP, STATE, ANY)
ORDER = {"blind": 0, "warming": 1, "unknown": 2, "covered": 3, "unused": 4, "ended": 5}


# ---- judging ------------------------------------------------------------------------------------
class InputState(NamedTuple):
    """One input of a run, judged (a tuple: ``judge`` makes ~20 a run and poll)."""

    name: str
    state: str
    last_at: float | None
    count: int
    said: str | None  # the state in words; None: a covered input's, which its times say (``why``)
    silent_for: float | None = None  # blind: how long no value came (never: since the run's first data)
    idle: float = 0.0  # covered: how long ago its last value came
    essential: bool = False  # blind: the run must send it (its never arriving is blindness too)

    @property
    def why(self) -> str:
        """The state in words (a covered input's made when asked: most are never shown)."""
        return self.said if self.said is not None else covered_why(self.idle)


class RuleState(NamedTuple):
    rule: str
    kind: str
    severity: str
    state: str
    inputs: tuple[InputState, ...]


class RunCoverage:
    """A run's coverage at ``now``. ``judge`` makes one every poll and the engine mostly stores it (from
    ``plan`` and ``judged``): its rules' states are made when first asked."""

    __slots__ = ("run", "now", "state", "plan", "judged", "_rules", "_groups")

    def __init__(
        self,
        run: str,
        now: float,
        state: str,  # the worst over its rules: blind, warming, unknown, covered (or ended)
        rules: tuple[RuleState, ...] | None = None,
        plan: Plan | None = None,  # what ``judge`` judged it from: its plan,
        judged: tuple[InputState, ...] = (),  # its inputs' states in the plan's order
        groups: list[tuple[str, tuple[InputState, ...]]] | None = None,  # per group: its state, inputs
    ) -> None:
        self.run, self.now, self.state = run, now, state
        self.plan, self.judged = plan, judged
        self._rules, self._groups = rules, groups

    @property
    def rules(self) -> tuple[RuleState, ...]:
        if self._rules is None:
            p, worst_of = self.plan, self._groups or []
            rules = p.rules if p is not None else ()
            group_of = p.group_of if p is not None else ()
            self._rules = tuple(
                [RuleState(n, k, s, *worst_of[g]) for (n, k, s, _), g in zip(rules, group_of, strict=True)]
            )
        return self._rules

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RunCoverage):
            return NotImplemented
        return (self.run, self.now, self.state, self.rules) == (
            other.run,
            other.now,
            other.state,
            other.rules,
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"RunCoverage(run={self.run!r}, now={self.now!r}, state={self.state!r}, rules={self.rules!r})"

    def blind(self) -> list[RuleState]:
        return [r for r in self.rules if r.state == "blind"]

    def blind_inputs(self) -> dict[str, list[str]]:
        """input -> the rules it leaves blind, in rule order."""
        out: dict[str, list[str]] = {}
        for r in self.rules:
            for i in r.inputs:
                if i.state == "blind":
                    out.setdefault(i.name, []).append(r.rule)
        return out

    def input(self, name: str) -> InputState | None:
        return next((i for r in self.rules for i in r.inputs if i.name == name), None)

    def to_json(self) -> dict[str, Any]:
        return {
            "state": self.state,
            "at": self.now,
            "rules": [
                {
                    "rule": r.rule,
                    "kind": r.kind,
                    "severity": r.severity,
                    "state": r.state,
                    "inputs": [
                        {
                            "name": i.name,
                            "state": i.state,
                            "last_at": i.last_at,
                            "count": i.count,
                            "why": i.why,
                        }
                        for i in r.inputs
                    ],
                }
                for r in self.rules
            ],
        }


def _ago(seconds: float) -> str:
    return format_duration(max(0.0, seconds))


UNUSED_WHY = "not logged by this run (optional)"


def covered_why(idle: float) -> str:
    """Why a covered input is: its last value came ``idle`` seconds ago (to the second: "0.021s ago"
    is noise on a page that refreshes every few seconds)."""
    return f"last value {_ago(round(idle))} ago"


def _expected(
    name: str, expect: str | None, importance: str | None, promised: frozenset[str], tracked: bool
) -> str:
    """What a run must send of input ``name``: ``always`` (never arriving is blindness), ``periodic`` or
    ``optional`` (judged once it came). ``importance``: what the packs declare of the input (essential,
    queried: essential where a source queries it, None: optional); ``expect``: the rule's own say, if
    any. ``tracked``: a trainer's tracker feeds the run (a source promises the step counter, or steps
    came): without one, nothing sends the trainer's metrics, and a rule on them expects nothing."""
    if name in SPECIAL:
        return "always" if name in promised else "optional"
    if importance == "queried" and expect != "always":
        return "always" if name in promised else "optional"
    if importance == "essential" or expect == "always":
        return "always" if tracked or name in promised else "optional"
    return "periodic" if expect == "periodic" else "optional"


class _Context:
    """What every input of one ``judge`` call is judged against, worked out once: the run's reference
    arrivals (steps, else any row) and each ``Seen``'s silence limit (most inputs share one: a run's rows
    mostly have one shape)."""

    __slots__ = ("merged", "now", "ended", "unavailable", "ref", "ref_gap", "_limits")

    def __init__(
        self, arrivals: Arrivals, merged: Mapping[str, Seen], now: float, unavailable: frozenset[str]
    ):
        self.merged, self.now, self.unavailable = merged, now, unavailable
        self.ended = arrivals.state if arrivals.state in TERMINAL_STATES else None
        self.ref = ref = merged.get(STEP) or merged.get(ANY)
        self.ref_gap = 2.0 * max(ref.gaps) if ref is not None and ref.gaps else None
        self._limits: dict[int, float | None] = {}

    def limit(self, seen: Seen) -> float | None:
        """``seen.limit()``, widened by the reference's longest recent gap."""
        key = id(seen)
        if key in self._limits:
            return self._limits[key]
        limit = seen.limit()
        if limit is not None and self.ref_gap is not None:
            # a row after a long pause (an eval logged after its own pause) is no sign the others stopped
            limit = max(limit, self.ref_gap)
        self._limits[key] = limit
        return limit


def _input_state(
    name: str, expect: str, arrivals: Arrivals, cx: _Context, for_: float, look_grace: float = LOOK_GRACE
) -> InputState:
    seen = cx.merged.get(name)
    now = cx.now
    if cx.ended is not None:
        last, count = (seen.last, seen.count) if seen is not None else (None, 0)
        return InputState(name, "ended", last, count, f"the run is {cx.ended}")
    if name in cx.unavailable:
        last, count = (seen.last, seen.count) if seen is not None else (None, 0)
        return InputState(name, "unknown", last, count, "its source cannot be read now")
    ref = cx.ref
    if seen is None:
        if expect == "optional":
            return _unused(name)
        if expect == "periodic":
            return InputState(name, "warming", None, 0, "expected at evals or saves; none yet")
        if ref is None:
            return InputState(name, "warming", None, 0, "no data from the run yet")
        what = "steps" if STEP in cx.merged else "rows"
        young = ref.count < MIN_ROWS or now - ref.first < for_
        if young:
            return InputState(name, "warming", None, 0, f"the run is young ({ref.count} {what} logged)")
        looked = arrivals.looked.get(name)
        if looked is not None and now - looked < max(for_, look_grace):
            return InputState(
                name, "warming", None, 0, f"first looked for {_ago(now - looked)} ago; none yet"
            )
        silent = now - (ref.first if looked is None else max(ref.first, looked))
        return InputState(
            name, "blind", None, 0, f"never arrived; {ref.count:,} {what} logged", silent, essential=True
        )
    last = seen.last
    idle = now - last
    if name not in SPECIAL and ref is not None:
        limit = cx.limit(seen)
        if limit is not None and idle > limit and ref.last - last > limit:
            return InputState(
                name,
                "blind",
                last,
                seen.count,
                f"stopped {_ago(idle)} ago (it came every {_ago(seen.cadence() or 0)})",
                essential=expect == "always",
            )
    return InputState(name, "covered", last, seen.count, None, None, idle)


@functools.cache
def _unused(name: str) -> InputState:
    """An optional input the run never logged (the same every poll)."""
    return InputState(name, "unused", None, 0, UNUSED_WHY)


@dataclass(frozen=True)
class Plan:
    """What a run's coverage is judged from, beyond its arrivals: per rule, the inputs it needs and what
    it expects of each (``_expected``), the distinct (input, expect, window) judged once each. It
    depends on the rules, the promised inputs, whether a tracker feeds the run and its kind, which
    rarely change: ``judge`` reuses it (``plans``) rather than sorting and classifying every poll."""

    inputs: tuple[tuple[str, str, float], ...]  # (name, expect, for_)
    rules: tuple[tuple[str, str, str, tuple[int, ...]], ...]  # (name, kind, severity, indices into inputs)
    # the distinct sets of inputs of the rules (most rules share theirs: the step clock, the state, the
    # loss), each judged once a poll; per rule, its set's position
    groups: tuple[tuple[int, ...], ...] = ()
    group_of: tuple[int, ...] = ()
    # what is derived from the plan once, not every poll (``coverage_stored``: the stored rule table)
    memo: dict[str, Any] = field(default_factory=dict, compare=False, repr=False, hash=False)


def plan(
    rules: Iterable[tuple[Any, frozenset[str]]], promised: frozenset[str], tracked: bool, run_kind: str | None
) -> Plan:
    rules = list(rules)
    importance: dict[str, str] = {}  # an input is as important as the most any pack declares it
    for spec, _ in rules:
        for name, level in spec.importance.items():
            if importance.get(name) != "essential":
                importance[name] = level
    inputs, out = {}, []
    for spec, feeds in rules:
        if not feeds:
            continue  # a rule that is off (a threshold with no bound) needs nothing
        other_kind = bool(run_kind and run_kind != "other" and spec.for_kind and spec.for_kind != run_kind)
        idx = []
        for name in sorted(feeds):
            expect = _expected(name, spec.expect, importance.get(name), promised, tracked)
            if other_kind and not name.startswith("@"):
                expect = "optional"
            idx.append(inputs.setdefault((name, expect, spec.for_), len(inputs)))
        out.append((spec.name, spec.kind, spec.severity.value, tuple(idx)))
    groups: dict[tuple[int, ...], int] = {}
    group_of = tuple(groups.setdefault(r[3], len(groups)) for r in out)
    return Plan(tuple(inputs), tuple(out), tuple(groups), group_of)


def judge(
    run: str,
    rules: Iterable[tuple[Any, frozenset[str]]],
    arrivals: Arrivals,
    now: float,
    unavailable_feeds: frozenset[str] = frozenset(),
    promised: frozenset[str] = frozenset(),
    run_kind: str | None = None,
    plans: dict | None = None,
    look_grace: float = LOOK_GRACE,
) -> RunCoverage:
    """The coverage of a run's rules at ``now``. ``rules``: (RuleSpec, its feeds) per rule;
    ``unavailable_feeds``: inputs whose every source cannot be read now; ``promised``: inputs a source of
    the run's watch says it provides (Prometheus aliases; STEP and STATE for a trainer's tracker);
    ``run_kind``: what the run is (pretraining, rl, ...): a rule on the metrics of another kind's pack
    expects nothing of it (its step clock and state rules still count). ``plans``: a cache of the
    ``Plan`` of these ``rules`` (kept by the caller with them: emptied when they change)."""
    merged = arrivals.seen()
    tracked = STEP in promised or STEP in merged
    key = (promised, tracked, run_kind)
    p = plans.get(key) if plans is not None else None
    if p is None:
        p = plan(rules, promised, tracked, run_kind)
        if plans is not None:
            if len(plans) >= 8:
                plans.clear()
            plans[key] = p
    cx = _Context(arrivals, merged, now, unavailable_feeds)
    judged = tuple(
        [_input_state(name, expect, arrivals, cx, for_, look_grace) for name, expect, for_ in p.inputs]
    )
    worst_of = []  # per group of inputs: (its worst state, its input states)
    for idx in p.groups:
        if len(idx) == 1:
            states = (judged[idx[0]],)
            worst_of.append((states[0].state, states))
        else:
            states = tuple([judged[i] for i in idx])
            worst_of.append((group_state([s.state for s in states]), states))
    counted = [w for w, _ in worst_of if w != "unused"]  # every group is some rule's
    state = min(counted, key=ORDER.__getitem__) if counted else "unused"
    return RunCoverage(run, now, state, None, p, judged, worst_of)


def group_state(states: list[str]) -> str:
    """The state of a rule whose inputs are in ``states``: the worst, but an unused optional input beside
    a covered one leaves it covered."""
    worst = min(states, key=ORDER.__getitem__)
    if worst == "unused" and "covered" in states:
        return "covered"
    return worst
