"""``restarts``: restarts of a run within a window; with ``no_progress`` a crash loop.

A restart is seen from any of three signals: a step rewind (the run resumed from a checkpoint), the
state turning back to running after crashed/failed/killed/preempted, or an increase of a restart
counter (``counter``, e.g. ``restarts_total``). One restart often shows up twice (the counter rises,
then the first step after the restore is a rewind): a rewind with no step seen since the previous
restart signal is that same restart, and so is a counter increase right after the state turned back
to running (or the reverse) with no step and no crash between them.

A crash loop (``no_progress: true``) counts only the restarts in the current run of restarts with no
progress between them: the run never got beyond the highest step it had reached at the previous
restart. A run that restarts often but moves on each time (OPT-175B restarted ~90 times in two
months) is not looping. Its restarts count while each came within ``window`` of the one before (and
the newest within ``window`` of now): a loop is a loop whatever its cycle, and a slow run redoing an
hour of steps from its last save between crashes loops as surely as a fast one (a fixed window would
drop its first restart as its third arrives, and the alert would flap).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from typing import Literal

from pydantic import Field

from alerts.model import Finding
from monitor.durations import Duration, format_duration
from monitor.rules.base import Detector, register
from monitor.rules.spec import RuleSpec
from monitor.rules.windows import take_first
from monitor.samples import RUNNING_OR_UNKNOWN, RunState, Sample


class RestartsSpec(RuleSpec):
    kind: Literal["restarts"] = "restarts"
    min_restarts: int = Field(default=3, ge=1, description="fires at this many restarts in the window")
    window: Duration = Field(default=3600.0, gt=0)
    no_progress: bool = Field(default=False, description="count only restarts with no progress between")
    counter: str | None = Field(default="restarts_total", description="a restart counter metric, if any")


class RestartSignals:
    """Restarts seen in a run's samples, with whether the run had progressed since the one before.

    Shared by the run's restart rules that watch the same counter (share_key)."""

    # fmt: off
    __slots__ = (
        "counter_name", "state", "last_step", "high_water", "high_at_restart", "signalled", "signalled_by",
        "counter", "total", "fresh",
    )
    # fmt: on

    def __init__(self, counter: str | None) -> None:
        self.counter_name = counter
        self.state: RunState | None = None
        self.last_step: int | None = None
        self.high_water: int | None = None  # the highest step ever reached
        self.high_at_restart: int | None = None  # the high-water mark at the previous restart
        self.signalled = False  # a restart signal with no step since
        self.signalled_by: str | None = None  # "state" or "counter": what signalled it (None after a step
        # or a crash): the other signal of the same restart is not a second one
        self.counter: float | None = None
        self.total = 0
        self.fresh: list[tuple[float, bool]] = []  # the restarts of the latest sample: (t, progressed)

    def _restart(self, t: float) -> None:
        self.total += 1
        progressed = self.high_at_restart is None or (
            self.high_water is not None and self.high_water > self.high_at_restart
        )
        self.fresh.append((t, progressed))
        self.high_at_restart = self.high_water

    def observe(self, sample: Sample) -> None:
        if self.fresh:
            self.fresh = []
        st = sample.state
        if st is not None:
            if st == RunState.RUNNING and self.state not in RUNNING_OR_UNKNOWN:
                if self.signalled_by != "counter":
                    self._restart(sample.t)
                self.signalled, self.signalled_by = True, "state"
            elif st not in RUNNING_OR_UNKNOWN:
                self.signalled_by = None  # down again: the next signal is another restart
            self.state = st
        name = self.counter_name
        if name is not None and sample.metrics:
            v = sample.metrics.get(name)
            if v is not None and _finite(v):
                if self.counter is not None and v > self.counter:
                    jump = v - self.counter  # may overflow to inf between huge values
                    n = min(int(jump), 100) if _finite(jump) else 100
                    for _ in range(n - 1 if self.signalled_by == "state" else n):
                        self._restart(sample.t)
                    self.signalled, self.signalled_by = True, "counter"
                self.counter = v
        step = sample.step
        if step is not None:
            last = self.last_step
            if last is not None and step < last and not self.signalled:
                self._restart(sample.t)
            self.signalled, self.signalled_by = False, None
            self.last_step = step
            if self.high_water is None or step > self.high_water:
                self.high_water = step


@register
class RestartsDetector(Detector[RestartsSpec]):
    kind = "restarts"
    plot = "progress"
    spec_model = RestartsSpec

    __slots__ = ("signals", "_follower", "times")

    def __init__(self, rule: RestartsSpec, run: str) -> None:
        super().__init__(rule, run)
        self.hot = False
        self.signals = RestartSignals(rule.counter)
        self._follower = False
        self.times: list[float] = []  # restarts that count, in the window, oldest first

    def inputs(self) -> frozenset[str] | None:
        return None

    def share_key(self) -> Hashable:
        return ("restarts", self.rule.counter)

    def share_with(self, leader: Detector) -> None:
        assert isinstance(leader, RestartsDetector)
        self.signals = leader.signals
        self._follower = True

    @property
    def high_water(self) -> int | None:
        return self.signals.high_water

    def observe(self, sample: Sample) -> None:
        sig = self.signals
        if not self._follower:
            sig.observe(sample)
        if sig.fresh:
            for t, progressed in sig.fresh:
                if self.rule.no_progress and (
                    progressed or self.times and t - self.times[-1] > self.rule.window
                ):
                    self.times.clear()  # the loop (if any) starts here
                self.times.append(t)
        if self.times:
            self._expire(sample.t)
            self.hot = len(self.times) >= self.rule.min_restarts

    def observe_shared(
        self, followers: Sequence[Detector], samples: Sequence[Sample], i: int, end: int
    ) -> int:
        # a segment's samples carry no state: without the counter and with no step going back they
        # bring no restart, and rules with no restart in their window have nothing to do
        sig = self.signals
        members = [self, *followers]
        name = sig.counter_name
        if i >= end or any(m.times or m.hot for m in members):  # type: ignore[attr-defined]
            return i
        if name is not None and name in samples[i].metrics:
            return i
        last, stepped, k = sig.last_step, False, i
        while k < end:
            step = samples[k].step
            if step is not None:
                if last is not None and step < last:
                    break  # a rewind: sample by sample
                last, stepped = step, True
            k += 1
        if k > i:
            sig.fresh = []
            if stepped:
                sig.signalled, sig.signalled_by = False, None
                sig.last_step = last
                if sig.high_water is None or last > sig.high_water:
                    sig.high_water = last
        return k

    def _expire(self, now: float) -> None:
        times, horizon = self.times, now - self.rule.window
        if self.rule.no_progress:
            if times and times[-1] <= horizon:
                times.clear()  # no restart for a window: the loop is over
            return
        while times and times[0] <= horizon:
            take_first(times)

    def holds_until(self) -> float:
        if not self.times:
            return math.inf
        return (self.times[-1] if self.rule.no_progress else self.times[0]) + self.rule.window

    def evaluate(self, now: float) -> Finding:
        self._expire(now)
        r = self.rule
        n = len(self.times)
        active = n >= r.min_restarts
        self.hot = active
        win = format_duration(r.window)
        what = "restart" if n == 1 else "restarts"
        what += " without progress" if r.no_progress else ""
        reason = f"{n} {what} in the last {win}"
        if r.no_progress and n > 1 and now - self.times[0] > r.window:
            reason = (
                f"{n} {what} in {format_duration(now - self.times[0])}, each within {win} of the one before"
            )
        if r.no_progress and self.high_water is not None and active:
            reason += f" (stuck below step {self.high_water})"
        if not active:
            reason += f", fires at {r.min_restarts}"
        return Finding(
            active,
            value=float(n),
            threshold=float(r.min_restarts),
            step=self.signals.last_step,
            reason=reason,
            onset=self.times[0] if active and self.times else None,  # the first restart it counted
        )

    def stats(self) -> dict[str, int]:
        return {"restarts": self.signals.total}


def _finite(v: object) -> bool:
    """A finite number (a counter value from a buggy source may be anything)."""
    try:
        return not v - v  # type: ignore[operator]
    except TypeError:
        return False
