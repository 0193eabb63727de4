"""``stall``: no new step for longer than the run's own cadence allows.

The limit adapts to the run: max(floor, k x the p99 of recent step intervals, the learned pause
allowance). Intervals longer than floor/3 are pauses, not cadence: they stay out of the p99, so one
long gap cannot inflate the limit tenfold. Pauses the run came back from by itself (checkpoint saves,
evals, or every step of a very slow run) are learned once they recur: the limit is at least
``pause_factor`` x the longest pause that happened twice among the last 8 (two within 1.5x of each
other), capped at ``max_pause``; a one-off hang that resolved itself teaches nothing. After a
(re)start the run gets a separate allowance to restore and compile before its first step:
``startup``, or, once this run has restored before, ``restore_factor`` x its longest recent restore
(never below ``floor``). While the source cannot be read the run's progress is unknown, not stalled.
"""

from __future__ import annotations

import math
from collections import deque
from typing import Literal

from pydantic import Field

from alerts.model import Finding
from monitor.durations import Duration, format_duration
from monitor.rules.base import RUNNING_OR_UNKNOWN, Detector, register
from monitor.rules.spec import RuleSpec
from monitor.rules.windows import MAX_WINDOW
from monitor.samples import Sample

MIN_INTERVALS = 8  # step intervals needed before the p99 is trusted
LEARNED = 8  # restores and pauses remembered
RECURS = 1.5  # two pauses within this factor of each other are the same kind of pause


class StallSpec(RuleSpec):
    kind: Literal["stall"] = "stall"
    floor: Duration = Field(default=900.0, description="never fire before this long without a step")
    k: float = Field(default=10.0, gt=0, description="limit = max(floor, k x recent p99 step interval)")
    window: int = Field(
        default=256, ge=8, le=MAX_WINDOW, description="recent step intervals kept for the p99"
    )
    startup: Duration = Field(default=2700.0, description="allowance from a (re)start to the first step")
    restore_factor: float = Field(
        default=2.0, gt=0, description="after earlier restores: allowance = this x the longest one"
    )
    pause_factor: float = Field(
        default=1.5, gt=0, description="learned pauses: allowance = this x the longest recurring one"
    )
    max_pause: Duration = Field(default=3600.0, description="cap on the learned pause allowance")
    restart_counter: str | None = Field(
        default="restarts_total", description="a counter whose increase means the process restarted"
    )


@register
class StallDetector(Detector[StallSpec]):
    kind = "stall"
    plot = "progress"
    spec_model = StallSpec
    clocked = True

    def __init__(self, rule: StallSpec, run: str) -> None:
        super().__init__(rule, run)
        self.hot = False
        self.wake_at = math.inf
        self.state: str | None = None
        self.blind = False  # the newest news is a source error: progress unknown
        self.last_step: int | None = None
        self.last_step_at: float | None = None
        self.awaiting_since: float | None = None  # a (re)start with no step since
        self.awaiting_learnable = False  # the start time is known (not merely first sight)
        self.intervals: deque[float] = deque(maxlen=rule.window)
        self.restores: deque[float] = deque(maxlen=LEARNED)
        self.pauses: deque[float] = deque(maxlen=LEARNED)
        self.counter: float | None = None
        self._limit: float | None = None  # cached until the intervals or pauses change
        self._pause_gap = rule.floor / 3  # longer step intervals are pauses, not cadence
        self._floor = rule.floor
        self._counter_name = rule.restart_counter

    def inputs(self) -> frozenset[str] | None:
        return None

    # ---- samples ---------------------------------------------------------------------------
    def _restart(self, t: float) -> None:
        if self.last_step is not None or self.state == "running":  # a run known to take steps
            self.awaiting_since, self.awaiting_learnable = t, True

    def observe(self, sample: Sample) -> None:
        t = sample.t
        if sample.source_error is not None:
            self.blind = True
            self.wake_at = math.inf
            return
        self.blind = False
        st = sample.state
        if st is not None:
            resumed = st == "running" and self.state not in RUNNING_OR_UNKNOWN
            self.state = st
            if resumed:
                self._restart(t)  # resumed after a crash or preemption
        counter = self._counter_name
        if counter is not None and sample.metrics:
            v = sample.metrics.get(counter)
            if v is not None and _finite(v):
                if self.counter is not None and v > self.counter:
                    self._restart(t)
                self.counter = v
        step = sample.step
        if step is None:
            if self.last_step_at is None and self.awaiting_since is None and st == "running":
                self.awaiting_since = t  # first sight of a run reported running, no step yet
        else:
            self._step(step, t)
        # when it may fire at the earliest, with no new sample
        if self.state not in RUNNING_OR_UNKNOWN:
            self.wake_at = math.inf
        elif self.awaiting_since is not None:
            self.wake_at = self.awaiting_since + self.startup_allowance()
        elif self.last_step_at is not None:
            self.wake_at = self.last_step_at + self._floor  # a lower bound: evaluate() refines it
        else:
            self.wake_at = math.inf

    def _step(self, step: int, t: float) -> None:
        last = self.last_step
        if self.awaiting_since is not None:
            if self.awaiting_learnable and t > self.awaiting_since:
                self.restores.append(t - self.awaiting_since)
            self.awaiting_since = None
            self.last_step, self.last_step_at = step, t
            return
        if last is None or step < last:
            # first step seen, or a rewind: the run resumed from a checkpoint, its cadence restarts here
            self.last_step, self.last_step_at = step, t
            return
        if step > last:
            gap = t - self.last_step_at
            if gap > 0:
                if gap > self._pause_gap:
                    self.pauses.append(gap)  # a long pause the run came back from by itself
                else:
                    self.intervals.append(gap)  # the cadence: pauses stay out of the p99
                self._limit = None
            self.last_step, self.last_step_at = step, t

    # ---- the limit -------------------------------------------------------------------------
    def limit(self) -> float:
        if self._limit is None:
            r = self.rule
            limit = r.floor
            if len(self.intervals) >= MIN_INTERVALS:
                ordered = sorted(self.intervals)
                p99 = ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]
                limit = max(limit, r.k * p99)
            recurring = self.recurring_pause()
            if recurring is not None:
                limit = max(limit, min(r.max_pause, r.pause_factor * recurring))
            self._limit = limit
        return self._limit

    def recurring_pause(self) -> float | None:
        """The longest pause that happened at least twice (two of the recent pauses within 1.5x)."""
        ordered = sorted(self.pauses, reverse=True)
        for longer, shorter in zip(ordered, ordered[1:], strict=False):
            if shorter * RECURS >= longer:
                return longer
        return None

    def startup_allowance(self) -> float:
        if self.restores:
            return max(self.rule.floor, self.rule.restore_factor * max(self.restores))
        return self.rule.startup

    # ---- the verdict -----------------------------------------------------------------------
    def evaluate(self, now: float) -> Finding:
        if self.state not in RUNNING_OR_UNKNOWN:
            return Finding(False, step=self.last_step, reason=f"run is {self.state}")
        if self.blind:
            return Finding(False, step=self.last_step, reason="source unreadable: progress unknown")
        if self.awaiting_since is not None:
            waited = now - self.awaiting_since
            allowance = self.startup_allowance()
            self.wake_at = self.awaiting_since + allowance
            what = "start" if self.last_step is None else "restart"
            learned = " learned from earlier restores" if self.restores else ""
            return Finding(
                waited > allowance,
                value=waited,
                threshold=allowance,
                step=self.last_step,
                reason=f"no first step {format_duration(waited)} after {what} "
                f"(allowance {format_duration(allowance)}{learned})",
            )
        if self.last_step_at is None:
            return Finding(False, reason="no data yet")
        idle = now - self.last_step_at
        limit = self.limit()
        self.wake_at = self.last_step_at + limit
        if idle > limit:
            return Finding(
                True,
                value=idle,
                threshold=limit,
                step=self.last_step,
                reason=f"no new step for {format_duration(idle)} (limit {format_duration(limit)})",
            )
        return Finding(
            False,
            value=idle,
            threshold=limit,
            step=self.last_step,
            reason=f"last step {self.last_step} {format_duration(idle)} ago, within the limit "
            f"{format_duration(limit)}",
        )

    def holds_until(self) -> float:
        return math.inf  # only a sample can change the verdict

    def stats(self) -> dict[str, float | int | None]:
        return {"limit": self.limit(), "last_step": self.last_step}


def _finite(v: object) -> bool:
    """A finite number (a counter value from a buggy source may be anything)."""
    try:
        return not v - v  # type: ignore[operator]
    except TypeError:
        return False
