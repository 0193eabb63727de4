"""The detector interface and the registry from rule ``kind`` to detector class.

A detector evaluates one rule for one run. It is fed every sample it asks for once, in time order,
and asked at ``now`` whether the rule's condition holds. Detectors are pure: no I/O, no clock.

Besides ``observe`` and ``evaluate``, a detector publishes three cheap hints that let the evaluator
skip work on the hot path (one replayed sample must cost microseconds):

- ``inputs()``: the metric names whose samples it needs, or None for every sample (state, steps).
- ``hot``: after ``observe``, False promises that ``evaluate(t).active`` is False for every ``t``
  until the next ``observe`` (the default True is always safe, merely slower).
- ``clocked`` and ``wake_at``: a clocked detector's condition can turn true as time passes with no
  new sample (a stall); ``wake_at`` is the earliest time at which that can happen (-inf: any time).
  ``silence``: that timer runs on the absence of data (a stall, a metric gone), which the end of a
  recorded trace looks like too; replay runs its clock on after the trace only for the other timers
  (a crash's grace).

``holds_until`` says how long a true condition stays true without samples; ``share_key``/``share_with``
let two rules over the same statistics keep them once.

``export_state``/``import_state`` carry a detector across a restart of herowatch (``rules.snapshot``);
``ready`` says whether a detector has seen enough to let a firing alert resolve (after a restart
without a snapshot it may not have). ``feeds`` names the data a detector depends on, so that an
unreadable source freezes exactly the rules it feeds.
"""

from __future__ import annotations

import enum
import math
from abc import ABC, abstractmethod
from collections.abc import Hashable, Mapping, Sequence
from typing import ClassVar, Generic, TypeVar

from alerts.model import Finding
from monitor.rules import snapshot
from monitor.rules.spec import RuleSpec
from monitor.samples import ANY, STATE, STEP, Sample  # noqa: F401 - the feeds, re-exported

SpecT = TypeVar("SpecT", bound=RuleSpec)


class Stop(enum.IntEnum):
    """Why ``observe_many`` stopped (false only for ``RAN_OUT``)."""

    RAN_OUT = 0  # it took every sample it was given
    DUE = 1  # clocked: its ``wake_at`` was reached, at the end of that sample time
    HOT = 2  # it turned hot after a sample of that time (it took the rest of that time too)


# Module names for the hot loops: looking up an enum member costs about 0.2 µs on Python 3.11.
RAN_OUT, DUE, HOT = Stop.RAN_OUT, Stop.DUE, Stop.HOT


class Detector(ABC, Generic[SpecT]):
    """Evaluates one rule for one run. Fed every sample of the run once, in time order."""

    kind: ClassVar[str]
    spec_model: ClassVar[type[RuleSpec]]
    clocked: ClassVar[bool] = False
    silence: ClassVar[bool] = False  # its timer runs on the absence of data (see above)
    # Its finding is about the run's state or end (a crash, a failure): it judges on once the run is
    # over. Every other rule's condition is over when the run is (engine.run_rules.RunRules.judged).
    about_the_end: ClassVar[bool] = False
    # What a notification's picture shows for this kind: "metric" (the rule's metric around the event,
    # the threshold as a line), "progress" (the step reached against time, the stall shaded) or "none".
    plot: ClassVar[str] = "metric"

    # A detector's fields are slots (each kind lists its own, its parts' ``__slots__ = ()``): thirty
    # detectors a run, and a ``__dict__`` each (made again by every snapshot's read of it) cost ~5 KB a run.
    __slots__ = ("rule", "run", "hot", "wake_at")

    def __init__(self, rule: SpecT, run: str) -> None:
        self.rule = rule
        self.run = run
        self.hot = True
        self.wake_at = -math.inf

    def inputs(self) -> frozenset[str] | None:
        """Metric names whose samples this detector needs; None: every sample."""
        return frozenset({self.rule.metric}) if self.rule.metric else None

    def feeds(self) -> frozenset[str]:
        """The data whose source, when unreadable, leaves this rule unable to tell: metric names,
        ``STEP``, ``STATE`` or ``ANY``. By default its metric inputs, else the step clock and state."""
        wants = self.inputs()
        return frozenset(wants) if wants is not None else frozenset({STEP, STATE})

    def ready(self, now: float) -> bool:
        """Has the detector seen enough to say the condition no longer holds? (Only asked of a detector
        that restarted without its state while its alert was firing.)"""
        return True

    def export_state(self) -> dict:
        """A JSON-able snapshot of the detector's state (raises ``snapshot.SnapshotError``)."""
        return {
            "kind": self.kind,
            "rule": snapshot.rule_hash(self.rule),
            "state": snapshot.encode_attrs(self, skip=snapshot.SKIP),
        }

    def import_state(self, data: dict) -> bool:
        """Resume from ``export_state``'s snapshot; False (and unchanged) when it does not fit this rule."""
        if data.get("kind") != self.kind or data.get("rule") != snapshot.rule_hash(self.rule):
            return False
        decoded = {k: snapshot.decode(v) for k, v in dict(data["state"]).items() if k not in snapshot.SKIP}
        for name, value in decoded.items():
            try:
                setattr(self, name, value)
            except AttributeError:  # a field of an older version, not a slot now: unused
                if hasattr(self, "__dict__"):
                    raise
        return True

    @abstractmethod
    def observe(self, sample: Sample) -> None:
        """Take in one sample. Cheap: O(log W) or amortised O(1)."""

    def observe_many(self, samples: Sequence[Sample], i: int, end: int) -> tuple[int, Stop]:
        """Take in ``samples[i:end]`` in order, up to the end of the first sample time after which the
        detector is ``hot`` (or, clocked, due: ``wake_at`` reached). Returns the index after the last
        sample taken and why it stopped (``Stop``).
        Replay's batched path (``engine.segment``): the samples are of one run, in time order, carry
        the same metric names, no state and no source error. The default feeds ``observe`` one by one;
        a kind may take the common case in a loop of its own, ending in the same state."""
        observe = self.observe
        clocked = self.clocked
        while i < end:
            s = samples[i]
            observe(s)
            i += 1
            if self.hot or clocked and self.wake_at <= s.t:
                return self._stop(samples, i, end)
        return i, RAN_OUT

    def _uncommon(self, samples: Sequence[Sample], i: int, end: int) -> tuple[int, tuple[int, Stop] | None]:
        """A batched loop's uncommon sample (``samples[i]``) through ``observe``: the next index, and
        what ``observe_many`` returns when the detector turned hot (else None: the loop goes on)."""
        self.observe(samples[i])
        i += 1
        return i, (self._stop(samples, i, end) if self.hot else None)

    def _stop(self, samples: Sequence[Sample], i: int, end: int) -> tuple[int, Stop]:
        """``observe_many`` stops after ``samples[i - 1]``: the rest of that sample time, and why."""
        hot = self.hot
        t = samples[i - 1].t
        while i < end and samples[i].t == t:
            self.observe(samples[i])
            hot = hot or self.hot
            i += 1
        return i, HOT if hot else DUE

    def observe_shared(
        self, followers: Sequence[Detector], samples: Sequence[Sample], i: int, end: int
    ) -> int:
        """``observe_many`` for a group sharing statistics (``share_key``), asked of its leader: take
        ``samples[i:end]`` for the whole group as far as it can in a loop of its own, stopping after
        the first sample after which a member may be ``hot`` (each member's ``hot`` then set as its
        ``observe`` would). Returns the index it got to; the default takes none."""
        return i

    @abstractmethod
    def evaluate(self, now: float) -> Finding:
        """Is the rule's condition true at ``now``?"""

    def holds_until(self) -> float:
        """While the condition holds: the earliest time it can turn false with no new sample.

        Lets the evaluator leave a firing alert alone between samples. -inf (the default): any time,
        evaluate at every tick; +inf: only a sample can end it (a stall ends with a new step)."""
        return -math.inf

    def stats(self) -> Mapping[str, float | int | None]:
        """Figures worth showing on a dashboard (e.g. the latest spike score). Empty by default."""
        return {}

    def share_key(self) -> Hashable | None:
        """Detectors of one run with equal keys share their state: only the first is fed samples.

        E.g. the two spike rules on train/loss (the blip and the raised floor) keep one baseline."""
        return None

    def ride_key(self) -> Hashable | None:
        """A looser key: a group of detectors (equal ``share_key``) that all ``may_ride`` follows the
        leader of an earlier group with an equal ``ride_key`` (``share_with`` it too), as long as their
        states would agree; the detector takes a copy of its own at the moment they would not."""
        return None

    def may_ride(self) -> bool:
        return False

    def share_with(self, leader: Detector) -> None:
        """Adopt ``leader``'s state (same share_key). From now on ``observe`` only refreshes ``hot``."""
        raise NotImplementedError


def last_step(samples: Sequence[Sample], i: int, end: int) -> int | None:
    """The step of the last sample of ``samples[i:end]`` that has one."""
    for k in range(end - 1, i - 1, -1):
        step = samples[k].step
        if step is not None:
            return step
    return None


DETECTORS: dict[str, type[Detector]] = {}


def register(cls: type[Detector]) -> type[Detector]:
    if cls.kind in DETECTORS:
        raise ValueError(f"detector kind {cls.kind!r} registered twice")
    DETECTORS[cls.kind] = cls
    return cls


def fmt_value(v: float | None) -> str:
    """A number for a reason text: short, and NaN/Inf spelled out."""
    if v is None:
        return "-"
    if v != v:
        return "NaN"
    if math.isinf(v):
        return "Inf" if v > 0 else "-Inf"
    if v == int(v) and abs(v) < 1e9:
        return str(int(v))
    if abs(v) >= 1e5 or abs(v) < 1e-3:
        return f"{v:.3g}"
    return f"{v:.4g}"
